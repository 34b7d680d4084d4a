"""Helpers the benchmark scripts share for processes on loopback: a free port, waiting for an
HTTP answer, a process's resident memory, and starting kinference engine-sim and gateway
processes with their stderr in a temp directory (the caller stops them by pid)."""
import os
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                return r.status
        except Exception:
            time.sleep(0.2)
    raise RuntimeError("no answer from " + url)


def rss_mb(pid):
    """VmRSS of process `pid` in MiB (0 when /proc has none)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def start_engine_sim(binary, tmp, name, time_scale):
    """Starts `binary engine-sim` (served model "m") on a free port and waits for /health.
    Returns (process, base URL); its stderr goes to TMP/NAME.log."""
    port = free_port()
    proc = subprocess.Popen(
        [binary, "engine-sim", "--port", str(port), "--served-model-name", "m",
         "--time-scale", str(time_scale)],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"{name}.log"), "w"))
    wait_http(f"http://127.0.0.1:{port}/health")
    return proc, f"http://127.0.0.1:{port}"


def start_gateway(binary, tmp, config_text, port):
    """Writes TMP/gw.yaml, starts `binary gateway` with it and waits for /health on `port`.
    Its stderr goes to TMP/gw.log."""
    cfg = os.path.join(tmp, "gw.yaml")
    with open(cfg, "w") as f:
        f.write(config_text)
    proc = subprocess.Popen([binary, "gateway", "--config", cfg], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "gw.log"), "w"))
    wait_http(f"http://127.0.0.1:{port}/health")
    return proc
