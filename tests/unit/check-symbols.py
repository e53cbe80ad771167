#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-symbols.py: a library (libncm.so, libncm-lwip.so) exports exactly its .symbols list, each under its version node, nothing without the ncm_ prefix.
"""Usage: check-symbols.py NM LIBRARY SYMBOLS_FILE NODE_PREFIX. Prints TAP."""
import os
import subprocess
import sys

nm, library, symbols_file, node = sys.argv[1:5]
lst = os.path.basename(symbols_file)
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
            continue  # 'A': the version node's own name (LIBNCM_1.0)
        name, _, version = fields[2].partition('@')
        found[name] = version.lstrip('@')
    return found


listed = read_list(symbols_file)
found = exports(library)

check(listed == sorted(set(listed), key=lambda s: s.encode()),
      '%s is sorted (LC_ALL=C) without duplicates' % lst)
added = sorted(set(found) - set(listed))
check(not added, 'every exported symbol is listed in %s' % lst,
      ''.join('exported but not in %s: %s (an ABI addition: list it)\n' % (lst, s)
              for s in added))
removed = sorted(set(listed) - set(found))
check(not removed, 'every symbol in %s is exported' % lst,
      ''.join('listed in %s but not exported: %s (an ABI break)\n' % (lst, s)
              for s in removed))
unversioned = sorted(s for s, v in found.items() if not v.startswith(node))
check(not unversioned, 'every exported symbol has a %s version node' % node,
      ''.join('no %s version: %s@%s\n' % (node, s, found[s]) for s in unversioned))
foreign = sorted(s for s in found if not s.startswith('ncm_'))
check(not foreign, 'nothing but ncm_ symbols is exported (lwIP and helpers stay hidden)',
      ''.join('exported without our prefix: %s\n' % s for s in foreign))
check(len(found) > 0, 'the library exports something (nm could read it)')

print('TAP version 13')
print('1..%d' % len(results))
for i, (ok, name, detail) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, name))
    for line in detail.splitlines():
        print('# ' + line)
sys.exit(0 if all(ok for ok, _, _ in results) else 1)
