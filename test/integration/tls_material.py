"""Certificates, keys and password hashes for the TLS and authentication
tests, made with Debian's own tools (openssl, htpasswd) as an operator makes
them: a CA, a server certificate for 127.0.0.1 and localhost, a client
certificate signed by that CA and one signed by a CA nobody trusts."""
import os
import subprocess


def _run(*args, cwd):
    subprocess.run(list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)


def _key(name, cwd, algorithm="EC"):
    options = (["-pkeyopt", "ec_paramgen_curve:P-256"] if algorithm == "EC"
               else ["-pkeyopt", "rsa_keygen_bits:2048"])
    _run("openssl", "genpkey", "-algorithm", algorithm, *options, "-out", name, cwd=cwd)
    os.chmod(os.path.join(cwd, name), 0o600)


def _ca(prefix, subject, cwd):
    _key(prefix + ".key", cwd)
    _run("openssl", "req", "-x509", "-new", "-key", prefix + ".key", "-subj", subject,
         "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", prefix + ".crt", cwd=cwd)


def _leaf(prefix, subject, ca, extensions, cwd, algorithm="EC"):
    _key(prefix + ".key", cwd, algorithm)
    _run("openssl", "req", "-new", "-key", prefix + ".key", "-subj", subject,
         "-out", prefix + ".csr", cwd=cwd)
    with open(os.path.join(cwd, prefix + ".ext"), "w") as f:
        f.write(extensions)
    _run("openssl", "x509", "-req", "-in", prefix + ".csr", "-CA", ca + ".crt",
         "-CAkey", ca + ".key", "-CAcreateserial", "-days", "2",
         "-extfile", prefix + ".ext", "-out", prefix + ".crt", cwd=cwd)


class TlsMaterial:
    """Files in directory: ca.crt; server.crt/.key (SANs 127.0.0.1,
    localhost; an RSA key with server_key="RSA", else P-256); client.crt/.key
    (SAN DNS scraper.test, signed by ca); stranger.crt/.key (signed by
    stranger-ca, which nothing trusts); intermediate.crt (a CA that ca
    signed) and below-intermediate.crt/.key (a client it signed, SAN DNS
    below.test)."""

    def __init__(self, directory, server_key="EC"):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        _ca("ca", "/CN=tokenspeed-metrics test CA", directory)
        _ca("stranger-ca", "/CN=an untrusted CA", directory)
        _leaf("server", "/CN=localhost", "ca",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
              "extendedKeyUsage=serverAuth\n", directory, server_key)
        _leaf("client", "/CN=scraper", "ca",
              "subjectAltName=DNS:scraper.test\nextendedKeyUsage=clientAuth\n", directory)
        _leaf("stranger", "/CN=stranger", "stranger-ca",
              "subjectAltName=DNS:stranger.test\nextendedKeyUsage=clientAuth\n", directory)
        _leaf("intermediate", "/CN=tokenspeed-metrics test intermediate CA", "ca",
              "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n",
              directory)
        _leaf("below-intermediate", "/CN=below", "intermediate",
              "subjectAltName=DNS:below.test\nextendedKeyUsage=clientAuth\n", directory)

    def path(self, name):
        return os.path.join(self.dir, name)


def bcrypt_hash(password, cost=4):
    """A bcrypt hash of password as htpasswd (apache2-utils) writes it."""
    out = subprocess.run(["htpasswd", "-nbBC", str(cost), "", password], check=True,
                         capture_output=True, text=True).stdout
    return out.strip().lstrip(":")


def write_secret(path, text):
    """A credential file as an operator keeps one: text and a line break,
    readable by its owner only."""
    with open(path, "w") as file:
        file.write(text + "\n")
    os.chmod(path, 0o600)
