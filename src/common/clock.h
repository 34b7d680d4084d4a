// Clock: the one source of "now" for the pure cores (engine model, routing core).
//
// The cores never read a system clock; shells inject one. The gateway and engine-sim
// inject RealClock (optionally scaled), the simulator injects a ManualClock that its
// discrete-event loop advances. Times are seconds as double since an arbitrary epoch.
//
// Thread-safety: RealClock is safe from any thread. ManualClock is not synchronised;
// the simulator owns it on one thread.
#pragma once

#include <chrono>

namespace kinference {

// Seconds since the clock's epoch. Monotonic; never goes backwards.
using Seconds = double;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Seconds Now() const = 0;
};

// Wall-clock time from std::chrono::steady_clock. With time_scale K > 1 the clock
// runs K times faster than real time (model time), measured from construction.
class RealClock final : public Clock {
 public:
  explicit RealClock(double time_scale = 1.0)
      : scale_(time_scale), start_(std::chrono::steady_clock::now()) {}
  Seconds Now() const override {
    std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
    return d.count() * scale_;
  }
  double time_scale() const { return scale_; }

 private:
  double scale_;
  std::chrono::steady_clock::time_point start_;
};

// Virtual time, advanced explicitly. Advancing backwards is ignored.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(Seconds start = 0.0) : now_(start) {}
  Seconds Now() const override { return now_; }
  void AdvanceTo(Seconds t) {
    if (t > now_) now_ = t;
  }

 private:
  Seconds now_;
};

}  // namespace kinference
