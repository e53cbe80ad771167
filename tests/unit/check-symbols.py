#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-symbols.py: libncm.so exports exactly libncm/libncm.symbols, each under a LIBNCM_ version node of libncm.map.
"""Usage: check-symbols.py NM LIBRARY SYMBOLS_FILE. Prints TAP."""
import subprocess
import sys

nm, library, symbols_file = sys.argv[1:4]
results = []


def check(ok, name, detail=''):
    results.append((ok, name, detail))


def read_list(path):
    return [line.strip() for line in open(path)
            if line.strip() and not line.startswith('#')]


def exports(path):
    """name -> version node, for every symbol the library defines for others."""
    out = subprocess.run([nm, '-D', '--defined-only', path], check=True,
                         capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[1] == 'A':
            continue  # 'A': the version node's own name (LIBNCM_0.1)
        name, _, version = fields[2].partition('@')
        found[name] = version.lstrip('@')
    return found


listed = read_list(symbols_file)
found = exports(library)

check(listed == sorted(set(listed), key=lambda s: s.encode()),
      'libncm.symbols is sorted (LC_ALL=C) without duplicates')
added = sorted(set(found) - set(listed))
check(not added, 'every exported symbol is listed in libncm.symbols',
      ''.join('exported but not in libncm.symbols: %s (an ABI addition: list it)\n' % s
              for s in added))
removed = sorted(set(listed) - set(found))
check(not removed, 'every symbol in libncm.symbols is exported',
      ''.join('listed in libncm.symbols but not exported: %s (an ABI break)\n' % s
              for s in removed))
unversioned = sorted(s for s, v in found.items() if not v.startswith('LIBNCM_'))
check(not unversioned, 'every exported symbol has a LIBNCM_ version node (libncm.map)',
      ''.join('no LIBNCM_ version: %s@%s\n' % (s, found[s]) for s in unversioned))
check(len(found) > 0, 'the library exports something (nm could read it)')

print('TAP version 13')
print('1..%d' % len(results))
for i, (ok, name, detail) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, name))
    for line in detail.splitlines():
        print('# ' + line)
sys.exit(0 if all(ok for ok, _, _ in results) else 1)
