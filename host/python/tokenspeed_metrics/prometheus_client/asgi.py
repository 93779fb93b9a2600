"""make_asgi_app: an ASGI app that serves generate_latest(registry), for an
engine that mounts /metrics in its FastAPI or Starlette app."""
from urllib.parse import parse_qs

from .exposition import bake_output
from .registry import REGISTRY


def make_asgi_app(registry=REGISTRY, disable_compression=False):
    async def prometheus_app(scope, receive, send):
        assert scope.get("type") == "http"
        params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        accept_encoding = ",".join(value.decode("latin-1")
                                   for name, value in scope.get("headers", ())
                                   if name.decode("latin-1").lower() == "accept-encoding")
        status, headers, output = bake_output(registry, accept_encoding, params,
                                              disable_compression)
        payload = await receive()
        if payload.get("type") == "http.request":
            await send({"type": "http.response.start", "status": int(status.split(" ")[0]),
                        "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                    for k, v in headers]})
            await send({"type": "http.response.body", "body": output})

    return prometheus_app
