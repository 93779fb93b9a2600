"""Reads the node's text exposition (version 0.0.4, as the host renders it)
back into Metric objects, for REGISTRY.collect() and get_sample_value(). A
bucket's le is given as prometheus_client writes it in Python ("1.0" where
the host's text says "1"): readers key their buckets by that string."""
import math

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
        if "le" in labels:
            labels["le"] = python_bound_text(labels["le"])
        value = float(rest[0])
        timestamp = float(rest[1]) / 1000 if len(rest) > 1 else None
        if current is None or not sample_name.startswith(current.name):
            current = Metric(sample_name, "", "unknown")
            families.append(current)
        current.add_sample(sample_name, labels, value, timestamp)
    return families
