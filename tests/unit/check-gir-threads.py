#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# check-gir-threads.py: every function of a GIR (Ncm-0, NcmLwip-0) documents its parameters and says on which thread it may be called (a "Thread:" line).
"""Usage: check-gir-threads.py GIR... Prints TAP."""
import sys
import xml.etree.ElementTree as ET

NS = {'c': 'http://www.gtk.org/introspection/c/1.0',
      'g': 'http://www.gtk.org/introspection/core/1.0'}
CALLABLES = ('function', 'method', 'constructor')
results = []

for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    no_thread, no_param_doc, count = [], [], 0
    for el in root.iter():
        tag = el.tag.split('}')[-1]
        if tag not in CALLABLES:
            continue
        name = el.get('{%s}identifier' % NS['c'])
        if name is None or name.endswith('_get_type'):
            continue  # G_DECLARE_* type functions: "Thread: any" in the type's doc
        count += 1
        doc = el.find('g:doc', NS)
        if doc is None or 'Thread:' not in (doc.text or ''):
            no_thread.append(name)
        for p in el.iter('{%s}parameter' % NS['g']):
            if p.find('g:doc', NS) is None:
                no_param_doc.append('%s(%s)' % (name, p.get('name')))
        inst = el.find('g:parameters/g:instance-parameter', NS)
        if inst is not None and inst.find('g:doc', NS) is None:
            no_param_doc.append('%s(%s)' % (name, inst.get('name')))
    ns = root.find('g:namespace', NS).get('name')
    results.append((count > 0, '%s: the GIR lists functions (%d)' % (ns, count), ''))
    results.append((not no_thread, '%s: every function says its thread (Thread:)' % ns,
                    '\n'.join('no Thread: line: ' + n for n in no_thread)))
    results.append((not no_param_doc, '%s: every parameter is documented' % ns,
                    '\n'.join('undocumented: ' + n for n in no_param_doc)))

print('TAP version 13')
print('1..%d' % len(results))
for i, (ok, name, detail) in enumerate(results, 1):
    print('%s %d - %s' % ('ok' if ok else 'not ok', i, name))
    for line in detail.splitlines():
        print('# ' + line)
sys.exit(0 if all(ok for ok, _, _ in results) else 1)
