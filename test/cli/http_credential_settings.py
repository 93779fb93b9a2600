"""http_credential_settings.py — the TLS and credential settings every HTTP
output takes from the kit (tls, basic_auth, bearer_token_file, headers), as
an operator meets their mistakes: a test mixin for the CLI tests of each such
output. The test class provides check(settings) -> (path, result) and
assert_startup_error(settings, *expected), and HTTP_URL_SETTING: a settings object
holding its URL key with an http:// URL.
"""
import os
import tempfile

import cli_harness


class HttpCredentialSettings:
    def secret_file(self, text):
        with tempfile.NamedTemporaryFile("w", dir=cli_harness.TMP_ROOT, delete=False) as file:
            file.write(text)
        self.addCleanup(os.unlink, file.name)
        return file.name

    def test_a_missing_password_file_fails_startup_naming_the_key_and_the_file(self):
        missing = os.path.join(cli_harness.TMP_ROOT, "no-such-password-file")
        self.assert_startup_error({"basic_auth": {"username": "u", "password_file": missing}},
                                  "'basic_auth.password_file'", missing)

    def test_a_client_certificate_with_an_http_url_fails_startup(self):
        cert = self.secret_file("certificate")
        self.assert_startup_error({**self.HTTP_URL_SETTING,
                                   "tls": {"cert_file": cert, "key_file": cert}},
                                  "'tls.cert_file' needs an https:// URL")

    def test_an_unknown_key_in_tls_fails_startup_listing_the_keys_of_tls(self):
        self.assert_startup_error({"tls": {"cert_fil": "/x"}}, "unknown key 'tls.cert_fil'",
                                  "allowed keys: ca_file, cert_file, key_file")

    def test_no_startup_error_quotes_a_secret(self):
        path, result = self.check({"headers": {"api-key": "hdr-S3CRET"}, "timeout_ms": 0})
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertNotIn("hdr-S3CRET", result.stderr + result.stdout)
        broken = self.secret_file("pw-S3CRET\nsecond line\n")
        self.assert_startup_error({"basic_auth": {"username": "u", "password_file": broken}},
                                  "'basic_auth.password_file'", broken, "line break")
        _, result = self.check({"basic_auth": {"username": "u", "password_file": broken}})
        self.assertNotIn("pw-S3CRET", result.stderr + result.stdout)

    def test_basic_auth_and_a_bearer_token_together_fail_startup(self):
        token = self.secret_file("tok")
        self.assert_startup_error({"basic_auth": {"username": "u", "password_file": token},
                                   "bearer_token_file": token},
                                  "'basic_auth' and 'bearer_token_file' cannot both be set")
