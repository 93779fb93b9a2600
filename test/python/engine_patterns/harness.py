"""What the engine programs share and what is not an engine's code: which
client this run uses (ENGINE_PATTERNS_CLIENT: prometheus_client or
tokenspeed_metrics), the launcher's start-up for that client, spawning the
producers, serving an ASGI app on the loopback and scraping it, and the report
the test reads (JSON on stdout: the exposition, each producer's pid and role,
the run's time window)."""
import asyncio
import json
import multiprocessing
import os
import sys
import threading
import time
import urllib.request

CLIENT = os.environ.get("ENGINE_PATTERNS_CLIENT", "prometheus_client")
OURS = CLIENT == "tokenspeed_metrics"
# tokenspeed_metrics with the imports changed and nothing else: no start(),
# PROMETHEUS_MULTIPROC_DIR as for prometheus_client.
ZERO_LINE = os.environ.get("ENGINE_PATTERNS_ZERO_LINE") == "1"


def start_launcher(workdir):
    """The launcher's one start-up line: prometheus_client reads its directory
    from the environment (set before it is imported, as engines do);
    tokenspeed_metrics starts its node with the flags the test gives, or,
    with the imports changed and nothing else, runs as prometheus_client."""
    if OURS and not ZERO_LINE:
        import tokenspeed_metrics
        flags = json.loads(os.environ.get("ENGINE_PATTERNS_FLAGS", "[]"))
        tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                                  "--metrics-multiproc-dir", workdir] + flags)
    else:
        directory = os.path.join(workdir, "prometheus-multiproc")
        os.makedirs(directory, exist_ok=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory


def _producer_main(function, args, ready, release):
    function(*args)
    ready.set()
    if not release.wait(600):  # hang guard only
        raise SystemExit("never released")


class Producers:
    """Processes of the spawn start method, each running one (role, function,
    args) and then staying alive (as an engine's schedulers do while
    /metrics is scraped) until finish(). Started one after another, each
    once the previous one has recorded: mostrecent values depend on the
    order."""

    def __init__(self, targets):
        context = multiprocessing.get_context("spawn")
        self._release = context.Event()
        self._processes = []
        self.roles = {}
        for role, function, args in targets:
            ready = context.Event()
            process = context.Process(target=_producer_main, name=role,
                                      args=(function, args, ready, self._release))
            process.start()
            deadline = time.monotonic() + 120
            while not ready.wait(0.1):
                if process.exitcode is not None or time.monotonic() > deadline:
                    raise SystemExit("producer %s failed before recording (exit %s)"
                                     % (role, process.exitcode))
            self._processes.append(process)
            self.roles[str(process.pid)] = role

    def finish(self):
        """Lets every producer exit and waits for them; returns their pids.
        ENGINE_PATTERNS_LINGER_S (0 unless set) keeps them alive that much
        longer first: a load feed's subscriber hears a heartbeat."""
        time.sleep(float(os.environ.get("ENGINE_PATTERNS_LINGER_S", "0")))
        self._release.set()
        for process in self._processes:
            process.join(120)
            if process.exitcode != 0:
                raise SystemExit("producer %s exited with %s" % (process.name, process.exitcode))
        return [process.pid for process in self._processes]


def serve_asgi(app):
    """Serves app (an ASGI callable) on 127.0.0.1 from a daemon thread, one
    HTTP/1.0 GET at a time; returns its base URL."""
    ready = threading.Event()
    address = {}

    async def handle(reader, writer):
        request_line = (await reader.readline()).decode("latin-1")
        headers = []
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            headers.append((name.strip().lower().encode(), value.strip().encode()))
        path = request_line.split(" ")[1]
        path, _, query = path.partition("?")
        scope = {"type": "http", "method": "GET", "path": path, "query_string": query.encode(),
                 "headers": headers}
        response = {}

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                response["status"] = message["status"]
                response["headers"] = message["headers"]
            else:
                response["body"] = message.get("body", b"")

        await app(scope, receive, send)
        head = "HTTP/1.0 %d OK\r\n" % response["status"]
        for name, value in response["headers"]:
            head += "%s: %s\r\n" % (name.decode(), value.decode())
        head += "Content-Length: %d\r\n\r\n" % len(response["body"])
        writer.write(head.encode("latin-1") + response["body"])
        await writer.drain()
        writer.close()

    def run():
        async def main():
            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            address["port"] = server.sockets[0].getsockname()[1]
            ready.set()
            await server.serve_forever()
        asyncio.run(main())

    threading.Thread(target=run, daemon=True).start()
    if not ready.wait(60):
        raise SystemExit("the ASGI server did not start")
    return "http://127.0.0.1:%d" % address["port"]


def scrape(url):
    with urllib.request.urlopen(url, timeout=60) as response:
        return response.headers.get("Content-Type"), response.read().decode()


def report(exposition, roles, window, **extra):
    """The run's result, for the test."""
    json.dump(dict(extra, exposition=exposition, roles=roles, window=window), sys.stdout)
    sys.stdout.flush()


def now():
    return time.time()


def running_sum(values):
    """What prometheus_client's _sum.inc(value) per value accumulates: left
    to right, uncompensated (sum() of floats compensates since Python 3.12)."""
    total = 0.0
    for value in values:
        total += value
    return total


def idiom_expectation(metric, batches):
    """What the batched idiom recorded for (interval, n) batches: one event
    per batch, n samples each, the intervals' running sum."""
    return {"metric": metric, "batches": len(batches), "samples": sum(n for _, n in batches),
            "sum": running_sum(interval for interval, _ in batches)}
