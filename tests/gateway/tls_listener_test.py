#!/usr/bin/env python3
"""The gateway's HTTPS listener with a real TLS client (Python's ssl module, OpenSSL),
end to end, with certificates made at test time by the openssl CLI (a CA, server
certificates for 127.0.0.1, client certificates from that CA and from another one):

  - listen.tls with client_ca_file: a client presenting a certificate from the CA gets
    200; one presenting none, or one from another CA, is not served (handshake fails);
  - reload without restart: the certificate and key files are replaced (atomic rename,
    as a Kubernetes Secret update is) and new connections get the new certificate, and
    the change is logged; a replacement that does not load is logged and the previous
    certificate stays in use;
  - server_timeouts: a connection that sends no request is closed after header_s.

Usage: tls_listener_test.py KINFERENCE_BIN
"""
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1]
MODEL = "google/gemma-3-27b-it"
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def make_ca(d, name):
    key, crt = os.path.join(d, name + ".key"), os.path.join(d, name + ".crt")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj", "/CN=" + name)
    return key, crt


def make_leaf(d, name, ca, server):
    key, csr, crt = (os.path.join(d, name + ext) for ext in (".key", ".csr", ".crt"))
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key, "-out", csr, "-subj", "/CN=" + name)
    ext = os.path.join(d, name + ".ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n" if server
                else "extendedKeyUsage=clientAuth\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial",
            "-out", crt, "-days", "2", "-extfile", ext)
    return key, crt


def install(d, leaf):
    """Puts `leaf` at d/tls.crt, d/tls.key by rename (each file replaced atomically)."""
    for src, dst in ((leaf[0], "tls.key"), (leaf[1], "tls.crt")):
        shutil.copyfile(src, os.path.join(d, dst + ".new"))
        os.rename(os.path.join(d, dst + ".new"), os.path.join(d, dst))


def fingerprint(path):
    out = subprocess.run(["openssl", "x509", "-in", path, "-outform", "DER"], check=True,
                         capture_output=True).stdout
    return out


def https_get(port, ca_crt, client=None, path="/health"):
    """(status line, served certificate DER) or (error text, None)."""
    ctx = ssl.create_default_context(cafile=ca_crt)
    if client:
        ctx.load_cert_chain(client[1], client[0])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                der = s.getpeercert(binary_form=True)
                s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                          .encode())
                got = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
        if not got:
            return "error: closed without a response", None
        return got.split(b"\r\n", 1)[0].decode(), der
    except (ssl.SSLError, OSError) as e:
        return f"error: {e}", None


def wait_port(path, marker, proc):
    for _ in range(600):
        m = re.search(marker + r" listening on [\d.]+:(\d+)", open(path).read())
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    sys.exit(f"{marker} did not start:\n" + open(path).read())


def main():
    tmp = tempfile.mkdtemp(prefix="kinference-tls-")
    procs = []
    gw_err = os.path.join(tmp, "gateway.err")
    try:
        ca = make_ca(tmp, "ca")
        other_ca = make_ca(tmp, "other-ca")
        server_a = make_leaf(tmp, "server-a", ca, True)
        server_b = make_leaf(tmp, "server-b", ca, True)
        client = make_leaf(tmp, "client", ca, False)
        stranger = make_leaf(tmp, "stranger", other_ca, False)
        tls_dir = os.path.join(tmp, "tls")
        os.makedirs(tls_dir)
        install(tls_dir, server_a)

        eng_out = os.path.join(tmp, "engine.out")
        eng = subprocess.Popen([BIN, "engine-sim", "--port", "0", "--time-scale", "50"],
                               stdout=open(eng_out, "w"), stderr=subprocess.DEVNULL)
        procs.append(eng)
        eport = wait_port(eng_out, "engine-sim", eng)
        with open(os.path.join(tmp, "gateway.yaml"), "w") as f:
            f.write(f"""listen:
  address: 127.0.0.1
  port: 0
  tls:
    cert_file: {tls_dir}/tls.crt
    key_file: {tls_dir}/tls.key
    client_ca_file: {ca[1]}
    reload_interval_s: 0.2
server_timeouts: {{header_s: 1, keep_alive_s: 5, body_s: 60}}
log_format: json
time_scale: 50
pools:
  - {{name: sim, model: {MODEL}, endpoints: ["http://127.0.0.1:{eport}"]}}
""")
        gw_out = os.path.join(tmp, "gateway.out")
        gw = subprocess.Popen([BIN, "gateway", "--config", os.path.join(tmp, "gateway.yaml")],
                              stdout=open(gw_out, "w"), stderr=open(gw_err, "w"))
        procs.append(gw)
        port = wait_port(gw_out, "gateway", gw)

        line, der = https_get(port, ca[1], client)
        check(line == "HTTP/1.1 200 OK", f"client certificate from the CA: served ({line})")
        check(der == fingerprint(server_a[1]), "certificate a is served")
        line, _ = https_get(port, ca[1], None)
        check(not line.startswith("HTTP/"), f"no client certificate: not served ({line})")
        line, _ = https_get(port, ca[1], stranger)
        check(not line.startswith("HTTP/"), f"certificate from another CA: not served ({line})")

        install(tls_dir, server_b)
        served_b = False
        for _ in range(300):  # hang guard: the files are checked every 0.2 s
            line, der = https_get(port, ca[1], client)
            if der == fingerprint(server_b[1]):
                served_b = True
                break
            time.sleep(0.1)
        check(served_b and line == "HTTP/1.1 200 OK",
              f"after the files changed, new connections get certificate b ({line})")

        with open(os.path.join(tls_dir, "tls.crt.new"), "w") as f:
            f.write("not a certificate\n")
        os.rename(os.path.join(tls_dir, "tls.crt.new"), os.path.join(tls_dir, "tls.crt"))
        warned = False
        for _ in range(300):
            warned = "did not load" in open(gw_err).read()
            if warned:
                break
            time.sleep(0.1)
        check(warned, "a replacement that does not load is logged")
        line, der = https_get(port, ca[1], client)
        check(line == "HTTP/1.1 200 OK" and der == fingerprint(server_b[1]),
              f"... and certificate b is still served ({line})")

        # server_timeouts.header_s: 1 s; a silent connection is closed (hang guard 30 s).
        with socket.create_connection(("127.0.0.1", port), timeout=30) as raw:
            try:
                closed = raw.recv(1) == b""
            except OSError:
                closed = True
        check(closed, "a connection that sends nothing is closed (server_timeouts.header_s)")

        gw.send_signal(signal.SIGTERM)
        gw.wait(timeout=30)
        events = [json.loads(l) for l in open(gw_err).read().splitlines() if l.startswith("{")]
        msgs = [e.get("msg", "") for e in events]
        check(any("TLS certificate files changed" in m for m in msgs),
              f"the reload is logged ({msgs})")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
        if failures and os.path.exists(gw_err):
            print("--- gateway.err\n" + open(gw_err).read()[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} failure(s)")


if __name__ == "__main__":
    main()
