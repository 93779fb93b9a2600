"""Reads the node's text exposition (version 0.0.4, as the host renders it)
back into Metric objects, for REGISTRY.collect() and get_sample_value(), and
re-spells it as prometheus_client writes it, for generate_latest(registry).
A bucket's le is given as prometheus_client writes it in Python ("1.0" where
the host's text says "1"): readers key their buckets by that string."""
import math
import re

from .metrics_core import Metric

_ESCAPES = {"\\": "\\", "n": "\n", '"': '"'}


def _unescape(text):
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], "\\" + text[i + 1]))
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _parse_labels(text, start):
    """(labels, index after the closing brace) of text[start:] after '{'."""
    labels, i = {}, start
    while True:
        while text[i] in " ,":
            i += 1
        if text[i] == "}":
            return labels, i + 1
        equals = text.index("=", i)
        name = text[i:equals].strip()
        i = equals + 2  # past ="
        value = []
        while text[i] != '"':
            if text[i] == "\\":
                value.append(text[i:i + 2])
                i += 2
            else:
                value.append(text[i])
                i += 1
        labels[name] = _unescape("".join(value))
        i += 1


def python_bound_text(text):
    """le as prometheus_client spells it: Python's repr of the float, with
    Go's switch to an exponent for large bounds."""
    bound = float(text)
    if math.isinf(bound):
        return "+Inf" if bound > 0 else "-Inf"
    if math.isnan(bound):
        return "NaN"
    spelled = repr(bound)
    dot = spelled.find(".")
    if bound > 0 and dot > 6:
        mantissa = ("%s.%s%s" % (spelled[0], spelled[1:dot], spelled[dot + 1:])).rstrip("0.")
        return "%se+0%d" % (mantissa, dot - 1)
    return spelled


def _family_name(name, typ):
    if typ == "counter" and name.endswith("_total"):
        return name[:-6]
    return name


def read_exposition(text):
    """The families of text, in order; a counter's Metric is named without
    _total, as prometheus_client names it."""
    families, helps, current = [], {}, None
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP "):
            name, _, documentation = line[7:].partition(" ")
            helps[name] = _unescape(documentation)
            continue
        if line.startswith("# TYPE "):
            name, _, typ = line[7:].partition(" ")
            typ = typ.strip()
            current = Metric(_family_name(name, typ), helps.get(name, ""),
                             "unknown" if typ == "untyped" else typ)
            families.append(current)
            continue
        if line.startswith("#"):
            continue
        brace = line.find("{")
        space = line.find(" ")
        if brace != -1 and (space == -1 or brace < space):
            sample_name = line[:brace]
            labels, end = _parse_labels(line, brace + 1)
            rest = line[end:].split()
        else:
            sample_name, rest = line[:space], line[space:].split()
            labels = {}
        if "le" in labels and current is not None and current.type in (
                "histogram", "gaugehistogram") and sample_name == current.name + "_bucket":
            labels["le"] = python_bound_text(labels["le"])
        value = float(rest[0])
        timestamp = float(rest[1]) / 1000 if len(rest) > 1 else None
        if current is None or not sample_name.startswith(current.name):
            current = Metric(sample_name, "", "unknown")
            families.append(current)
        current.add_sample(sample_name, labels, value, timestamp)
    return families


# One label of the host's text: its name and its value as written (escapes
# kept: the host escapes \\, \n and \" as prometheus_client does).
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def _respelled_labels(text, numbers, bucket):
    """A label set's text (between the braces) with the labels sorted by name
    and a bucket's le spelled as prometheus_client spells it (le of any
    other sample is the engine's own label value, kept as written)."""
    pairs = _LABEL.findall(text)
    pairs.sort()
    parts = []
    for name, value in pairs:
        if bucket and name == "le":
            value = _spelled(value, numbers)
        parts.append(name + '="' + value + '"')
    return ",".join(parts)


def _spelled(number, numbers):
    """floatToGoString of a number's text; numbers caches each distinct text."""
    spelled = numbers.get(number)
    if spelled is None:
        spelled = numbers[number] = python_bound_text(number)
    return spelled


def _respelled_sample(line, numbers, bucket=False):
    """One sample line as prometheus_client writes it: labels sorted by name,
    the value as its floatToGoString spells it (and le when bucket: a
    histogram's _bucket sample)."""
    brace = line.find("{")
    if brace < 0:
        name, _, rest = line.partition(" ")
        head = name
    else:
        close = line.rfind("}")
        head = line[:brace] + "{" + _respelled_labels(line[brace + 1:close], numbers,
                                                      bucket) + "}"
        rest = line[close + 1:].lstrip(" ")
    value, _, timestamp = rest.partition(" ")
    if timestamp:
        return head + " " + _spelled(value, numbers) + " " + timestamp + "\n"
    return head + " " + _spelled(value, numbers) + "\n"


class _Series:
    """The lines of one histogram or summary series, by kind, as the host
    writes them one series after another (buckets, _sum, _count)."""
    __slots__ = ("buckets", "sum", "count")

    def __init__(self):
        self.buckets, self.sum, self.count = [], None, None


def _grouped(lines, family, layout):
    """A histogram's or summary's sample lines (respelled) in
    prometheus_client's order: its multiprocess collector writes every
    series' _sum first, then each series' buckets and _count (a summary:
    _count, _sum per series); its own collect() each series' buckets,
    _count, _sum."""
    sums, bodies, series = [], [], _Series()

    def flush(series):
        if series.sum is None and series.count is None and not series.buckets:
            return
        tail = [series.count] if series.count is not None else []
        total = [series.sum] if series.sum is not None else []
        if not series.buckets:  # a summary
            bodies.extend(tail + total)
        elif layout == "multiprocess":
            sums.extend(total)
            bodies.extend(series.buckets + tail)
        else:
            bodies.extend(series.buckets + tail + total)

    for name, line in lines:
        kind = name[len(family):]
        if kind == "_bucket":
            if series.sum is not None or series.count is not None:
                flush(series)
                series = _Series()
            series.buckets.append(line)
        elif kind == "_sum" or kind == "_count":
            slot = "sum" if kind == "_sum" else "count"
            if getattr(series, slot) is not None:
                flush(series)
                series = _Series()
            setattr(series, slot, line)
        else:  # not the host's: kept where it is
            flush(series)
            series = _Series()
            bodies.append(line)
    flush(series)
    return sums + bodies


def respelled_exposition(text, layout="multiprocess"):
    """The host's text exposition as prometheus_client's generate_latest
    writes the same families: HELP and TYPE lines as they are, each sample's
    labels sorted by name, le and values spelled by floatToGoString ("3.0",
    le="0.0", "1e+06"), a histogram's and a summary's samples in the order
    of prometheus_client's multiprocess collector (layout "multiprocess")
    or of its own collect() (layout "single"). Families stay in the host's
    order (by name)."""
    out, numbers = [], {}
    family, typ, pending = None, None, []

    def flush():
        if pending:
            out.extend(_grouped(pending, family, layout))
            del pending[:]

    for line in text.split("\n"):
        if not line:
            continue
        if line[0] == "#":
            if line.startswith("# HELP "):
                flush()
                out.append(line + "\n")
            elif line.startswith("# TYPE "):
                flush()
                family, _, typ = line[7:].partition(" ")
                out.append(line + "\n")
            continue
        if typ == "histogram" or typ == "summary":
            end = line.find("{")
            if end < 0:
                end = line.find(" ")
            name = line[:end]
            pending.append((name, _respelled_sample(line, numbers, name == family + "_bucket")))
        else:
            out.append(_respelled_sample(line, numbers))
    flush()
    return "".join(out)


def exposition_blocks(text):
    """{family name as its HELP line gives it: its lines} of the host's text."""
    blocks = {}
    for block in ("\n" + text).split("\n# HELP ")[1:]:
        blocks[block[:block.find(" ")]] = "# HELP " + block + "\n"
    return blocks
