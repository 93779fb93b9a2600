"""endpoint_tls_bench.py — what TLS and basic authentication cost a scrape of
the /metrics endpoint of a running `simulate` (one rank): the mean time of
200 scrapes for each way of serving, as a ratio to plain HTTP on a kept-alive
connection measured in the same run. Certificates and a bcrypt hash (cost
10) are made with openssl and htpasswd, as test/integration/tls_material.py
makes them. Prints one line per case; asserts nothing (docs/performance.md).

Usage: python3 test/bench/endpoint_tls_bench.py BUILD_DIR
"""
import base64
import http.client
import os
import ssl
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from tls_material import TlsMaterial, bcrypt_hash  # noqa: E402

SCRAPES = 200
PASSWORD = "bench-password"


def start(binary, flags):
    process = subprocess.Popen([binary, "simulate", "--enable-metrics", "--metrics-port", "0",
                                "--ranks", "1", "--duration", "0", *flags],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in process.stdout:
        if line.startswith("Prometheus metrics: "):
            return process, int(line.split(":")[3].split("/")[0])
    raise RuntimeError("simulate did not print its endpoint")


def mean_scrape_seconds(binary, flags, context, auth, keep_alive):
    process, port = start(binary, flags)
    headers = {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(
            f"scraper:{PASSWORD}".encode()).decode()

    def connect():
        if context is None:
            return http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        return http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=context)

    def scrape(connection):
        connection.request("GET", "/metrics", headers=headers)
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"status {response.status}")

    try:
        connection = connect()
        scrape(connection)  # the first: handshake, render caches, bcrypt once
        began = time.perf_counter()
        for _ in range(SCRAPES):
            if not keep_alive:
                connection.close()
                connection = connect()
            scrape(connection)
        return (time.perf_counter() - began) / SCRAPES
    finally:
        process.terminate()
        process.wait()


def main():
    binary = os.path.join(sys.argv[1], "host", "tokenspeed-metrics")
    with tempfile.TemporaryDirectory() as tmp:
        material = TlsMaterial(os.path.join(tmp, "tls"))
        tls = (f"tls_server_config:\n  cert_file: {material.path('server.crt')}\n"
               f"  key_file: {material.path('server.key')}\n")
        users = f"basic_auth_users:\n  scraper: {bcrypt_hash(PASSWORD, cost=10)}\n"
        files = {}
        for name, text in (("tls", tls), ("auth", users), ("tls-auth", tls + users)):
            files[name] = os.path.join(tmp, name + ".yml")
            with open(files[name], "w") as file:
                file.write(text)
        context = ssl.create_default_context(cafile=material.path("ca.crt"))
        cases = [
            ("plain HTTP, kept alive", [], None, False, True),
            ("basic auth (verified pair remembered), kept alive",
             ["--metrics-web-config", files["auth"]], None, True, True),
            ("TLS, kept alive", ["--metrics-web-config", files["tls"]], context, False, True),
            ("TLS + basic auth, kept alive", ["--metrics-web-config", files["tls-auth"]], context,
             True, True),
            ("plain HTTP, a new connection per scrape", [], None, False, False),
            ("TLS, a new connection per scrape (full handshake)",
             ["--metrics-web-config", files["tls"]], context, False, False),
        ]
        baseline = None
        for name, flags, tls_context, auth, keep_alive in cases:
            seconds = mean_scrape_seconds(binary, flags, tls_context, auth, keep_alive)
            baseline = baseline or seconds
            print(f"{name:52s} {seconds * 1000:7.2f} ms/scrape  x{seconds / baseline:5.2f}")


if __name__ == "__main__":
    main()
