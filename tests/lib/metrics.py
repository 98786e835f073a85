#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Scrape a luaop /metrics endpoint and print one sample's value (0 when absent).
Parses the whole exposition with Debian's python3-prometheus-client (fails on malformed text).
Usage: metrics.py URL 'name{label="v",...}'"""
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

url, want = sys.argv[1], sys.argv[2]
text = urllib.request.urlopen(url, timeout=5).read().decode()
name, _, labels = want.partition("{")
labels = dict(kv.split("=", 1) for kv in labels.rstrip("}").split(",") if kv) if labels else {}
labels = {k: v.strip('"') for k, v in labels.items()}
value = 0.0
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            value = s.value
print(int(value) if value == int(value) else value)
