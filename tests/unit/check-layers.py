#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-layers.py: the tree's shape, checked: no two source files call each other in a circle, the pure layers include no libusb/GLib/lwIP, device bytes are read only through ncm-le.h.
"""Usage: check-layers.py SOURCE_ROOT. Prints TAP."""
import glob
import os
import re
import sys

root = sys.argv[1]
results = []


def check(ok, name, detail=''):
    results.append((ok, name, detail))


def c_files(folder):
    return sorted(glob.glob(os.path.join(root, folder, '**', '*.c'), recursive=True))


def strip_comments(src):
    src = re.sub(r'/\*.*?\*/', '', src, flags=re.S)
    return re.sub(r'//[^\n]*', '', src)


def call_graph(files):
    """file -> files whose non-static functions it calls."""
    defs = {}
    sources = {f: strip_comments(open(f).read()) for f in files}
    for f, src in sources.items():
        lines = src.split('\n')
        for i, line in enumerate(lines):
            m = re.match(r'^([a-z_][a-z0-9_]*)\(', line)
            if m and not (i > 0 and lines[i - 1].startswith('static')):
                defs.setdefault(m.group(1), set()).add(f)
    edges = {}
    for f, src in sources.items():
        local = set(re.findall(r'^static[^\n]*\n([a-z_][a-z0-9_]*)\(', src, re.M))
        edges[f] = set()
        for name in re.findall(r'\b([a-z_][a-z0-9_]*)\s*\(', src):
            if name not in local:
                edges[f] |= {g for g in defs.get(name, ()) if g != f}
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(os.path.relpath(x, root) for x in comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return found


for folder in ('libncm', 'netstack'):
    files = c_files(folder)
    found = cycles(call_graph(files))
    check(files and not found, f'{folder}: no files call each other in a circle ({len(files)} files)',
          '; '.join(' <-> '.join(c) for c in found))

# The pure layers: fuzzers and unit tests link them with no stubs.
forbidden = re.compile(r'#\s*include\s*[<"](libusb|glib|gio/|gobject/|lwip/)')
for folder in ('libncm/ntb', 'libncm/cdc'):
    bad = []
    for f in sorted(glob.glob(os.path.join(root, folder, '*.[ch]'))):
        for n, line in enumerate(open(f), 1):
            if forbidden.search(line):
                bad.append(f'{os.path.relpath(f, root)}:{n}')
    check(not bad, f'{folder} includes no libusb, GLib or lwIP header', ' '.join(bad))

# One checked accessor layer: no private byte readers beside ncm-le.h.
# A definition of le16(), be32(), get16()...: at a line's start (return
# type on its own line) or after the type on the same line.
reader = re.compile(r'^(?:[a-z_][a-z0-9_ ]*[ *])?(?:le|be|get|rd|read)_?(?:16|32)\s*\(', re.M)
bad = []
for folder in ('libncm', 'netstack'):
    for f in sorted(glob.glob(os.path.join(root, folder, '**', '*.[ch]'), recursive=True)):
        if os.path.basename(f) == 'ncm-le.h':
            continue
        if reader.search(strip_comments(open(f).read())):
            bad.append(os.path.relpath(f, root))
check(not bad, 'no byte reader outside libncm/ntb/ncm-le.h', ' '.join(bad))

print('TAP version 13')
print(f'1..{len(results)}')
for i, (ok, name, detail) in enumerate(results, 1):
    print(f'{"ok" if ok else "not ok"} {i} {name}')
    if not ok and detail:
        print(f'# {detail}')
sys.exit(0 if all(r[0] for r in results) else 1)
