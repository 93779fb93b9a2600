"""The endpoint's web configuration (--metrics-web-config) through `check`, as
an operator runs it:

- exporter-toolkit's own test data (test/data/exporter-toolkit-web, copied
  from its repository) gets exporter-toolkit's verdict file by file: accepted
  (with TLS or plain HTTP) or refused, naming the key at fault;
- a certificate, key, client CA or web configuration path that is a FIFO, a
  device or a directory is refused at once with one line naming the file and
  the key (exit 2), never waited on;
- a private key encrypted with a passphrase is refused the same way, run on a
  terminal of its own: no passphrase is ever asked for.
"""
import os
import pty
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                    "exporter-toolkit-web")

TLS = "TLS"
PLAIN = "plain HTTP"

# exporter-toolkit's verdict on each file, read from its web/tls_config.go
# (getConfig, ConfigToTLSConfig, Serve, Validate) and its tests: TLS or PLAIN
# when its server starts with the file, else the keys one of which our error
# must name (exporter-toolkit's reason in the comment).
VERDICTS = {
    "tls_config_noAuth.requireandverifyclientcert.good.yml": TLS,
    "tls_config_noAuth.requireanyclientcert.good.yml": TLS,
    "tls_config_noAuth.requireanyclientcertkeyinline.good.yml": TLS,
    # "no such file" for client_ca_file; a client CA without a policy too.
    "web_config_auth_clientCAs_invalid.bad.yml": ("tls_server_config.client_ca_file",
                                                  "tls_server_config.client_auth_type"),
    # Named "bad", but RequireAndVerifyClientCert without a client CA starts:
    # clients are verified against the system's CAs.
    "web_config_auth_clientCAs_missing.bad.yml": TLS,
    # Starts; only a client certificate without an allowed SAN is refused.
    "web_config_auth_client_san.bad.yaml": TLS,
    "web_config_auth_client_san.good.yaml": TLS,
    # "hashedSecret too short to be a bcrypted password".
    "web_config_auth_user_list_invalid.bad.yml": ("basic_auth_users.john",),
    "web_config_empty.yml": PLAIN,
    "web_config_headers.good.yml": PLAIN,
    # "invalid value for X-Content-Type-Options".
    "web_config_headers_content_type_options.bad.yml": (
        "http_server_config.headers.X-Content-Type-Options",),
    # "HTTP header "Content-Type" can not be configured".
    "web_config_headers_extra_header.bad.yml": ("http_server_config.headers.Content-Type",),
    "web_config_headers_frame_options.bad.yml": ("http_server_config.headers.X-Frame-Options",),
    # YAML errors.
    "web_config_junk.yml": ("",),
    "web_config_junk_key.yml": ("tls_server_config.cert_filse",),
    # "client CA's have been configured without a Client Auth Policy".
    "web_config_noAuth.bad.yml": ("tls_server_config.client_auth_type",),
    # VerifyClientCertIfGiven / RequireAndVerifyClientCert without a client
    # CA: verified against the system's CAs.
    "web_config_noAuth.good.blocking.yml": TLS,
    "web_config_noAuth.good.yml": TLS,
    "web_config_noAuth_allCiphers.good.yml": TLS,
    "web_config_noAuth_allCurves.good.yml": TLS,
    # "missing one of cert or cert_file".
    "web_config_noAuth_certPath_empty.bad.yml": ("tls_server_config.cert_file",),
    # "no such file".
    "web_config_noAuth_certPath_invalid.bad.yml": ("tls_server_config.cert_file",),
    # "missing one of cert or cert_file" (client_auth_type "x" is invalid too).
    "web_config_noAuth_certPath_keyPath_empty.bad.yml": ("tls_server_config.cert_file",
                                                         "tls_server_config.client_auth_type"),
    "web_config_noAuth_certPath_keyPath_invalid.bad.yml": ("tls_server_config.cert_file",),
    "web_config_noAuth_cert_empty.bad.yml": ("tls_server_config.cert_file",
                                             "tls_server_config.cert"),
    # "unknown cipher", "unknown curve".
    "web_config_noAuth_inventedCiphers.bad.yml": ("tls_server_config.cipher_suites[0]",),
    "web_config_noAuth_inventedCurves.bad.yml": ("tls_server_config.curve_preferences[0]",),
    # "missing one of key or key_file".
    "web_config_noAuth_keyPath_empty.bad.yml": ("tls_server_config.key_file",),
    # "no such file": its cert_file is server.cert, which does not exist.
    "web_config_noAuth_keyPath_invalid.bad.yml": ("tls_server_config.cert_file",
                                                  "tls_server_config.key_file"),
    "web_config_noAuth_key_empty.bad.yml": ("tls_server_config.key_file",
                                            "tls_server_config.key"),
    "web_config_noAuth_noHTTP2.good.yml": TLS,
    # Go's HTTP/2 server refuses to start: "TLSConfig.CipherSuites is missing
    # an HTTP/2-required AES_128_GCM_SHA256 cipher".
    "web_config_noAuth_noHTTP2Cipher.bad.yml": ("tls_server_config.cipher_suites",),
    "web_config_noAuth_someCiphers.good.yml": TLS,
    "web_config_noAuth_someCiphers_noOrder.good.yml": TLS,
    "web_config_noAuth_someCurves.good.yml": TLS,
    "web_config_noAuth_tlsInline.good.yml": TLS,
    # "unknown TLS version".
    "web_config_noAuth_wrongTLSVersion.bad.yml": ("tls_server_config.min_version",),
    "web_config_rate_limiter_nonblocking.yaml": PLAIN,
    # Starts; a burst of 0 then refuses every request (429).
    "web_config_rate_limiter_one_second.yaml": PLAIN,
    "web_config_users.good.yml": TLS,
    "web_config_users_noTLS.good.yml": PLAIN,
    # The two examples, web/web-config.yml and docs/web-config.yml.
    "web-config.yml": TLS,
    "docs-web-config.yml": TLS,
}


def web_config_check(path):
    return h.run("check", "--enable-metrics", "--metrics-port", "0",
                 "--metrics-web-config", path)


class ExporterToolkitVerdicts(h.CliTestCase):

    def test_the_table_covers_every_configuration_file_of_the_data(self):
        files = sorted(name for name in os.listdir(DATA) if name.endswith((".yml", ".yaml")))
        self.assertEqual(files, sorted(VERDICTS))
        self.assertEqual(len(files), 43)

    def test_every_file_gets_exporter_toolkits_verdict(self):
        for name, verdict in sorted(VERDICTS.items()):
            with self.subTest(file=name):
                path = os.path.join(DATA, name)
                result = web_config_check(path)
                if verdict in (TLS, PLAIN):
                    self.assert_ok(result)
                    # Only warnings (the test keys are readable by everyone).
                    self.assertEqual(result.errors, [], result.describe())
                    self.assertIn(f"web configuration {path}: {verdict}", result.stdout,
                                  result.describe())
                    continue
                line = self.assert_startup_error(result, f"file '{path}'",
                                                 warnings_allowed=True)
                named = [key for key in verdict if f"key '{key}'" in line]
                if verdict == ("",):
                    named = [""] if "key '" not in line else []
                self.assertTrue(named, f"expected one of the keys {verdict}\n{line}")


class FilesThatAreNotRegular(h.CliTestCase):
    """A FIFO would block open(2) until a writer came; a directory or a device
    is no certificate either. Each is refused at once by name."""

    def setUp(self):
        self.dir = self.make_dir()
        for name in ("server.crt", "server.key", "tls-ca-chain.pem"):
            shutil.copyfile(os.path.join(DATA, name), os.path.join(self.dir, name))
        os.chmod(os.path.join(self.dir, "server.key"), 0o600)
        os.mkfifo(os.path.join(self.dir, "fifo"))
        os.mkdir(os.path.join(self.dir, "a-directory"))

    def write(self, text):
        path = os.path.join(self.dir, "web.yml")
        with open(path, "w") as out:
            out.write(text)
        os.chmod(path, 0o600)
        return path

    def test_a_fifo_device_or_directory_as_certificate_key_or_ca_is_refused_at_once(self):
        cases = [
            ("cert_file", "fifo", "a FIFO"),
            ("cert_file", "/dev/zero", "a character device"),
            ("cert_file", "a-directory", "is a directory"),
            ("key_file", "fifo", "a FIFO"),
            ("client_ca_file", "fifo", "a FIFO"),
        ]
        for key, target, kind in cases:
            with self.subTest(key=key, target=target):
                files = {"cert_file": "server.crt", "key_file": "server.key",
                         "client_ca_file": "tls-ca-chain.pem", key: target}
                path = self.write(
                    "tls_server_config:\n"
                    + "".join(f"  {name}: {value}\n" for name, value in files.items())
                    + "  client_auth_type: RequireAndVerifyClientCert\n")
                # A hang guard of 60 s: a FIFO used to block open(2) for ever.
                result = web_config_check(path)
                self.assert_startup_error(result, f"file '{path}'",
                                          f"key 'tls_server_config.{key}'", kind)

    def test_start_up_refuses_a_fifo_certificate_as_check_does(self):
        path = self.write("tls_server_config:\n  cert_file: fifo\n  key_file: server.key\n")
        result = h.run("simulate", "--duration", "1", "--enable-metrics", "--metrics-port", "0",
                       "--metrics-web-config", path)
        self.assert_startup_error(result, f"file '{path}'", "key 'tls_server_config.cert_file'",
                                  "a FIFO")

    def test_a_web_configuration_that_is_a_fifo_is_refused_at_once(self):
        fifo = os.path.join(self.dir, "fifo")
        result = web_config_check(fifo)
        self.assert_startup_error(result, f"file '{fifo}'", "key '--metrics-web-config'",
                                  "a FIFO")


def run_on_a_terminal(*args, guard_s=60):
    """Runs the binary with a new pseudo-terminal as its controlling terminal,
    stdin, stdout and stderr: the /dev/tty OpenSSL's default passphrase prompt
    reads. Returns the exit status (None when it still ran at the guard, or
    asked for a passphrase, and was killed) and what it wrote."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(h.BINARY, [h.BINARY, *args], h.clean_environment())
    output = b""
    deadline = time.monotonic() + guard_s  # a hang guard only
    while time.monotonic() < deadline and b"pass phrase" not in output.lower():
        if not select.select([fd], [], [], 0.5)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the program ended and the terminal closed
            chunk = b""
        if not chunk:
            break
        output += chunk
    # The terminal closes before the process has quite exited: wait for its
    # exit (up to the guard) unless it asked for a passphrase.
    asked = b"pass phrase" in output.lower()
    done, raw = os.waitpid(pid, os.WNOHANG)
    while not done and not asked and time.monotonic() < deadline:
        time.sleep(0.05)
        done, raw = os.waitpid(pid, os.WNOHANG)
    if not done:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    os.close(fd)
    return (os.waitstatus_to_exitcode(raw) if done else None,
            output.decode(errors="replace").replace("\r\n", "\n"))


class EncryptedPrivateKeys(h.CliTestCase):
    """OpenSSL asks for a passphrase on the terminal when it meets an
    encrypted key, unless told otherwise: start-up (or a reload) would wait
    there. Refused at once instead, naming the file and the key."""

    PASSPHRASE = "hunter2-passphrase"

    def setUp(self):
        self.dir = self.make_dir()
        key = os.path.join(self.dir, "encrypted.key")
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-aes-256-cbc", "-pass",
                        f"pass:{self.PASSPHRASE}", "-out", key], check=True, capture_output=True)
        subprocess.run(["openssl", "req", "-x509", "-new", "-key", key, "-passin",
                        f"pass:{self.PASSPHRASE}", "-days", "1", "-subj", "/CN=encrypted",
                        "-out", os.path.join(self.dir, "server.crt")],
                       check=True, capture_output=True)
        self.path = os.path.join(self.dir, "web.yml")
        with open(self.path, "w") as out:
            out.write("tls_server_config:\n  cert_file: server.crt\n  key_file: encrypted.key\n")

    def assert_refused_without_asking(self, status, output):
        self.assertNotIn("pass phrase", output.lower(), output)
        self.assertEqual(status, 2, output)
        lines = [line for line in output.splitlines()
                 if line.strip() and not line.startswith(h.WARNING_PREFIX)]
        self.assertEqual(len(lines), 1, output)
        for fragment in (f"file '{self.path}'", "key 'tls_server_config.key_file'",
                         "/encrypted.key' is encrypted", "never asks for a passphrase"):
            self.assertIn(fragment, lines[0])
        self.assertNotIn(self.PASSPHRASE, output)

    def test_check_refuses_an_encrypted_key_on_a_terminal_without_prompting(self):
        self.assert_refused_without_asking(*run_on_a_terminal(
            "check", "--enable-metrics", "--metrics-port", "0", "--metrics-web-config",
            self.path))

    def test_start_up_refuses_an_encrypted_key_on_a_terminal_without_prompting(self):
        self.assert_refused_without_asking(*run_on_a_terminal(
            "simulate", "--duration", "1", "--enable-metrics", "--metrics-port", "0",
            "--metrics-web-config", self.path))

if __name__ == "__main__":
    import unittest
    unittest.main()
