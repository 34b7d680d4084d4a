// RidgeFit: a small linear model y = sum_j w_j x_j learned online by least squares with
// exponential forgetting, shrunk towards a prior mean (ridge regression). Used where a
// cost's shape (how it splits between terms) must be learned from what a deployment
// shows, without the fit running away when the terms move together: the router's TTFT
// shape (routing/ttft_predictor.h) and decode-step model (routing/decode_model.h).
//
// Objective after n observations (x_k, y_k), newest last:
//   sum_k f^(n-k) (y_k - w.x_k)^2 + sum_j r_j (w_j - m_j)^2,
//   r_j = kappa * S_jj + epsilon,  S = sum_k f^(n-k) x_k x_k^T
// The penalty is relative to each term's own data (ridge on standardised features), so
// it is unit-free: a term the data never moved (S_jj = 0) stays at its prior mean, two
// terms that always move together split their joint effect towards the prior's ratio,
// and a term the data pins down is fitted to within a fraction kappa / (1 + kappa) of
// its least-squares value. The solution is recomputed from the decayed sufficient
// statistics (S, sum f^(n-k) x_k y_k), never updated recursively, so bounds applied to
// the returned weights cannot make it diverge (the failure of an earlier recursive fit,
// ttft_predictor.h).
//
// Thread-safety: not thread-safe; plain value.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>

namespace kinference::routing {

template <size_t K>
class RidgeFit {
 public:
  using Vec = std::array<double, K>;

  RidgeFit(double forgetting, double kappa) : forgetting_(forgetting), kappa_(kappa) {}

  void Observe(const Vec& x, double y) {
    for (size_t i = 0; i < K; ++i) {
      b_[i] = forgetting_ * b_[i] + x[i] * y;
      for (size_t j = 0; j < K; ++j) s_[i][j] = forgetting_ * s_[i][j] + x[i] * x[j];
    }
    ++n_;
  }

  // The weights minimising the objective for prior mean `m`.
  Vec Solve(const Vec& m) const {
    if (n_ == 0) return m;
    std::array<std::array<double, K + 1>, K> a{};
    for (size_t i = 0; i < K; ++i) {
      const double r = kappa_ * s_[i][i] + kEpsilon;
      for (size_t j = 0; j < K; ++j) a[i][j] = s_[i][j] + (i == j ? r : 0.0);
      a[i][K] = b_[i] + r * m[i];
    }
    // Gaussian elimination with partial pivoting; the matrix is symmetric positive
    // definite (S is PSD, the diagonal penalty positive), so it always succeeds.
    for (size_t c = 0; c < K; ++c) {
      size_t p = c;
      for (size_t i = c + 1; i < K; ++i)
        if (std::abs(a[i][c]) > std::abs(a[p][c])) p = i;
      std::swap(a[c], a[p]);
      if (std::abs(a[c][c]) < 1e-300) return m;
      for (size_t i = c + 1; i < K; ++i) {
        const double f = a[i][c] / a[c][c];
        for (size_t j = c; j <= K; ++j) a[i][j] -= f * a[c][j];
      }
    }
    Vec w{};
    for (size_t c = K; c-- > 0;) {
      double v = a[c][K];
      for (size_t j = c + 1; j < K; ++j) v -= a[c][j] * w[j];
      w[c] = v / a[c][c];
    }
    for (double v : w)
      if (!std::isfinite(v)) return m;
    return w;
  }

  int observations() const { return n_; }

 private:
  static constexpr double kEpsilon = 1e-12;
  double forgetting_, kappa_;
  std::array<std::array<double, K>, K> s_{};
  Vec b_{};
  int n_ = 0;
};

}  // namespace kinference::routing
