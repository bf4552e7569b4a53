"""Prometheus' text exposition format (version 0.0.4), checked the way promtool's
"check metrics" parses it, for the test of sortctl status --format=prometheus: promtool
comes with the Prometheus server, which the test machines need not have.

check(text) returns the samples as {(name, labels): value} and each family's type as
{name: type}, and raises ValueError naming the line at fault.
"""
import math
import re

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"')
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


def _labels(text, where):
    """The {a="b",...} part of a sample, as a sorted tuple of pairs."""
    pairs, pos = [], 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError("%s: bad label at %r" % (where, text[pos:]))
        pairs.append((m.group(1), m.group(2)))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise ValueError("%s: labels must be separated by commas" % where)
            pos += 1
    names = [p[0] for p in pairs]
    if len(set(names)) != len(names):
        raise ValueError("%s: a label named twice" % where)
    return tuple(sorted(pairs))


def _value(text, where):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text)
    try:
        v = float(text)
    except ValueError:
        raise ValueError("%s: %r is not a value" % (where, text)) from None
    if math.isnan(v) or text.strip() != text:
        raise ValueError("%s: %r is not a value" % (where, text))
    return v


def _sample(line, where):
    m = re.match(r"([^{\s]+)(?:\{(.*)\})? (\S+)(?: (-?\d+))?\Z", line)
    if not m or not NAME.match(m.group(1)):
        raise ValueError("%s: not a sample: %r" % (where, line))
    return m.group(1), _labels(m.group(2) or "", where), _value(m.group(3), where)


def _comment(line, where, families, seen):
    parts = line.split(" ", 3)
    if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
        return  # a plain comment
    kind, name = parts[1], parts[2]
    if not NAME.match(name):
        raise ValueError("%s: bad metric name %r" % (where, name))
    fam = families.setdefault(name, {})
    if kind in fam:
        raise ValueError("%s: a second %s for %s" % (where, kind, name))
    if name in seen:
        raise ValueError("%s: %s of %s after its samples" % (where, kind, name))
    if kind == "TYPE":
        if len(parts) != 4 or parts[3] not in TYPES:
            raise ValueError("%s: bad type for %s" % (where, name))
    elif len(parts) != 4 or not parts[3]:
        raise ValueError("%s: HELP for %s says nothing" % (where, name))
    fam[kind] = parts[3]


def check(text):
    if not text.endswith("\n"):
        raise ValueError("the last line does not end with a newline")
    families, seen, samples, last = {}, set(), {}, None
    for i, line in enumerate(text[:-1].split("\n"), 1):
        where = "line %d" % i
        if not line:
            raise ValueError("%s: empty" % where)
        if line.startswith("#"):
            _comment(line, where, families, seen)
            continue
        name, labels, value = _sample(line, where)
        fam = families.get(name, {})
        if fam.get("TYPE") == "counter" and value < 0:
            raise ValueError("%s: counter %s is negative" % (where, name))
        if name in seen and last != name:
            raise ValueError("%s: the samples of %s are not together" % (where, name))
        if (name, labels) in samples:
            raise ValueError("%s: %s%s twice" % (where, name, labels))
        seen.add(name)
        last = name
        samples[(name, labels)] = value
    return samples, {n: f.get("TYPE", "untyped") for n, f in families.items()}
