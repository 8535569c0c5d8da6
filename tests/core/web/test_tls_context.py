"""One TLS context per process, and it still verifies: sharing it must not loosen anything."""

import ssl

from newsbench_dagster.core.web.network import Fetcher, Routing, tls_context


def test_every_client_shares_one_verifying_context():
    shared = tls_context()
    assert shared is tls_context()
    assert shared.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname is True
    assert len(shared.get_ca_certs()) + shared.cert_store_stats()["x509_ca"] > 0


def test_the_fetcher_uses_it(tmp_path):
    with Fetcher(Routing(), {"https://example.test"}) as fetcher:
        pool = fetcher._client._transport._pool
        assert pool._ssl_context is tls_context(trust_env=True)
