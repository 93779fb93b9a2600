"""generate_latest, the WSGI app and server, write_to_textfile: the text
exposition (version 0.0.4) of a registry, as prometheus_client writes it.
OpenMetrics is not offered: a scraper asking for it gets the text format,
which Prometheus accepts."""
import gzip
import os
import socket
import threading
from socketserver import ThreadingMixIn
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tokenspeed_metrics import CONTENT_TYPE_LATEST

from .registry import REGISTRY, CollectorRegistry, text_of


def generate_latest(registry=REGISTRY):
    """The text exposition of registry, as bytes, written as
    prometheus_client writes it. With a MultiProcessCollector registered:
    every family of every process (the node's), then the custom collectors'.
    Any other object with collect() (a custom collector, prometheus_client's
    own registry) is written from what its collect() gives. (The package's
    tokenspeed_metrics.generate_latest() is the node's text as the host
    renders it, whatever it is given.)"""
    if isinstance(registry, CollectorRegistry):
        return registry.exposition_text().encode("utf-8")
    if not callable(getattr(registry, "collect", None)):
        raise TypeError(
            "generate_latest() takes a CollectorRegistry of tokenspeed_metrics.prometheus_client "
            "or another object with collect() (got %r)" % (registry,))
    return text_of(registry.collect()).encode("utf-8")


def _refuse_restriction(params):
    if params.get("name[]"):
        raise NotImplementedError(
            "/metrics?name[]=... is not offered: scrape the whole exposition")


def bake_output(registry, accept_encoding_header, params, disable_compression):
    """(status, headers, body) of one scrape."""
    _refuse_restriction(params)
    output = generate_latest(registry)
    headers = [("Content-Type", CONTENT_TYPE_LATEST)]
    if not disable_compression and "gzip" in (accept_encoding_header or "").lower():
        output = gzip.compress(output)
        headers.append(("Content-Encoding", "gzip"))
    return "200 OK", headers, output


def make_wsgi_app(registry=REGISTRY, disable_compression=False):
    """A WSGI app that serves generate_latest(registry)."""

    def prometheus_app(environ, start_response):
        params = parse_qs(environ.get("QUERY_STRING", ""))
        if environ.get("PATH_INFO") == "/favicon.ico":
            start_response("200 OK", [])
            return [b""]
        status, headers, output = bake_output(registry, environ.get("HTTP_ACCEPT_ENCODING"),
                                              params, disable_compression)
        start_response(status, headers)
        return [output]

    return prometheus_app


class _SilentHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        """No access log, as prometheus_client's server."""


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


def start_wsgi_server(port, addr="0.0.0.0", registry=REGISTRY, certfile=None, keyfile=None,
                      client_cafile=None, client_capath=None, protocol=None,
                      client_auth_required=False):
    """Serves generate_latest(registry) from a daemon thread; returns
    (server, thread) as recent prometheus_client does. TLS is not offered."""
    if certfile or keyfile or client_cafile or client_capath:
        raise NotImplementedError(
            "start_http_server with TLS is not offered: put a TLS proxy in front, or use the "
            "host's own /metrics endpoint (tokenspeed_metrics.metrics_url())")
    server_class = type("_Server", (_ThreadingWSGIServer,), {})
    if ":" in addr:
        server_class.address_family = socket.AF_INET6
    httpd = make_server(addr, port, make_wsgi_app(registry), server_class,
                        handler_class=_SilentHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    return httpd, thread


start_http_server = start_wsgi_server


def write_to_textfile(path, registry):
    """Writes generate_latest(registry) to path atomically (a temporary file
    renamed over it)."""
    tmppath = "%s.%s.%s" % (path, os.getpid(), threading.current_thread().ident)
    with open(tmppath, "wb") as out:
        out.write(generate_latest(registry))
    os.replace(tmppath, path)


def _no_pushgateway(*_args, **_kwargs):
    raise NotImplementedError(
        "the Pushgateway is not offered: select an output plugin of the host (otlp, "
        "remote_write, statsd) with --metrics-reporters instead")


push_to_gateway = pushadd_to_gateway = delete_from_gateway = _no_pushgateway
