"""http_credential_settings.py — the TLS and credential settings every HTTP
output takes from the kit (tls, basic_auth, bearer_token_file, headers,
sigv4), as an operator meets their mistakes: a test mixin for the CLI tests
of each such output. The test class provides check(settings) -> (path, result) and
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

    # ------------------------------------------------------------ sigv4
    def sigv4_files(self):
        return {"access_key_id_file": self.secret_file("AKIDCLITEST\n"),
                "secret_access_key_file": self.secret_file("sk-S3CRET-cli\n")}

    def test_sigv4_with_credential_files_passes_check_which_prints_paths_never_secrets(self):
        files = self.sigv4_files()
        path, result = self.check({"sigv4": {"region": "eu-west-1", **files}})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(files["secret_access_key_file"], result.stdout)
        self.assertNotIn("sk-S3CRET-cli", result.stderr + result.stdout)

    def test_sigv4_beside_basic_auth_or_a_bearer_token_fails_startup(self):
        files = self.sigv4_files()
        token = self.secret_file("tok")
        self.assert_startup_error({"bearer_token_file": token,
                                   "sigv4": {"region": "eu-west-1", **files}},
                                  "'sigv4' and 'basic_auth' or 'bearer_token_file' cannot both "
                                  "be set")
        self.assert_startup_error({"headers": {"Authorization": "x"},
                                   "sigv4": {"region": "eu-west-1", **files}},
                                  "'Authorization' header beside sigv4")

    def test_a_sigv4_role_arn_that_is_not_a_roles_arn_fails_startup_naming_the_key(self):
        self.assert_startup_error({"sigv4": {"region": "eu-west-1", **self.sigv4_files(),
                                             "role_arn": "metrics-writer"}},
                                  "'sigv4.role_arn' must be an IAM role's ARN "
                                  "(arn:aws:iam::<12-digit account>:role/<name>), "
                                  "got \"metrics-writer\"")

    def test_sigv4_with_a_role_arn_passes_check_without_calling_sts(self):
        # STS is called at the first request, never at startup: here nothing listens.
        files = self.sigv4_files()
        path, result = self.check({"sigv4": {"region": "eu-west-1", **files,
                                             "role_arn": "arn:aws:iam::123456789012:role/w",
                                             "role_session_name": "node-7",
                                             "sts_endpoint": "http://127.0.0.1:9/"}})
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("arn:aws:iam::123456789012:role/w", result.stdout)
        self.assertNotIn("sk-S3CRET-cli", result.stderr + result.stdout)

    def test_sigv4_role_keys_without_a_role_arn_fail_startup(self):
        files = self.sigv4_files()
        self.assert_startup_error({"sigv4": {"region": "eu-west-1", **files,
                                             "sts_endpoint": "https://sts.example/"}},
                                  "'sigv4.sts_endpoint' needs 'sigv4.role_arn'")

    def test_sigv4_keys_without_a_region_or_an_unreadable_key_file_fail_startup(self):
        files = self.sigv4_files()
        self.assert_startup_error({"sigv4": files}, "'sigv4.access_key_id_file' needs "
                                  "'sigv4.region'")
        missing = os.path.join(cli_harness.TMP_ROOT, "no-such-secret-key-file")
        self.assert_startup_error({"sigv4": {"region": "eu-west-1", **files,
                                             "secret_access_key_file": missing}},
                                  "'sigv4.secret_access_key_file'", missing)
        broken = self.secret_file("sk-S3CRET-broken\nsecond line\n")
        path, result = self.check({"sigv4": {"region": "eu-west-1", **files,
                                             "session_token_file": broken}})
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("'sigv4.session_token_file'", result.stderr)
        self.assertNotIn("S3CRET", result.stderr + result.stdout)
