#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
# py-closure.py: packs python3 and exactly what given scripts load (stdlib modules, gi, typelibs, shared libraries) into a cpio for the VM initramfs.
"""Usage: py-closure.py OUTPUT.cpio PYTHON SCRIPT...

Runs PYTHON on this host importing every module the scripts import (found
with ast, not by running them: they need the device), then lists what the
process loaded: the files of sys.modules with their cached bytecode, and
every mapped file (shared libraries, typelibs) from /proc/self/maps. The
environment (GI_TYPELIB_PATH, LD_LIBRARY_PATH, LD_PRELOAD) is the one the
guest will use. Everything lands at its host path, which run-vm.sh --cpio
lays over the guest's root. Typically 10-15 MB instead of the 54 MB of the
whole standard library.
"""
import ast
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = r'''
import importlib, importlib.util, json, os, sys
mods = json.loads(sys.argv[1])
import gi
for ns in ('Ncm', 'NcmLwip'):
    gi.require_version(ns, '0')
for m in mods:
    if m.startswith('gi.repository.'):
        importlib.import_module(m)
    else:
        try:
            importlib.import_module(m)
        except ImportError:
            pass  # a name the script imports only inside a try
# GI opens a namespace's shared library at its first type or call: ask
# the types of the namespaces the scripts use for their GTypes (GLib's own
# are loaded by gi itself).
for m in mods:
    ns = m.rsplit('.', 1)[-1]
    if m.startswith('gi.repository.') and ns not in ('GLib', 'GObject', 'Gio'):
        module = importlib.import_module(m)
        for info in gi.Repository.get_default().get_infos(ns):
            try:
                getattr(getattr(module, info.get_name()), '__gtype__', None)
            except Exception:
                pass  # constants, functions: no type
files = set()
for m in list(sys.modules.values()):
    f = getattr(m, '__file__', None)
    if f and os.path.exists(f):
        files.add(os.path.realpath(f))
        if f.endswith('.py'):
            c = importlib.util.cache_from_source(f)
            if os.path.exists(c):
                files.add(c)
# The stdlib's landmark, for the guest's prefix search (os is frozen).
import sysconfig
files.add(os.path.join(sysconfig.get_path('stdlib'), 'os.py'))
for line in open('/proc/self/maps'):
    parts = line.split(None, 5)
    if len(parts) == 6 and parts[5].startswith('/') and os.path.isfile(parts[5].strip()):
        files.add(parts[5].strip())
print(json.dumps(sorted(files)))
'''


def script_imports(path):
    mods = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == 'gi.repository':
                mods.update('gi.repository.' + a.name for a in node.names)
            else:
                mods.add(node.module)
    return sorted(mods)


def main(argv):
    out, python, scripts = argv[1], argv[2], argv[3:]
    mods = sorted({m for s in scripts for m in script_imports(s)})
    import json
    files = json.loads(subprocess.run([python, '-c', PROBE, json.dumps(mods)], check=True,
                                      stdout=subprocess.PIPE, text=True).stdout)
    files.append(os.path.realpath(python))
    # The interpreter's own libraries, and its name as the scripts call it.
    with tempfile.TemporaryDirectory() as stage:
        for f in files:
            dest = stage + f
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(f, dest)
        # The loader looks for sonames (libglib-2.0.so.0), /proc/self/maps
        # names the files they point at: bring the links along.
        for d in {os.path.dirname(f) for f in files}:
            for e in os.scandir(d):
                if e.is_symlink() and os.path.realpath(e.path) in files:
                    os.symlink(os.readlink(e.path), stage + e.path)
        # LD_PRELOAD names (a sanitizer's runtime) may be links elsewhere.
        for p in filter(None, os.environ.get('LD_PRELOAD', '').split(':')):
            if not os.path.lexists(stage + p):
                os.makedirs(os.path.dirname(stage + p), exist_ok=True)
                os.symlink(os.path.realpath(p), stage + p)
        os.makedirs(stage + '/usr/local/bin', exist_ok=True)
        os.symlink(os.path.realpath(python), stage + '/usr/local/bin/python3')
        names = subprocess.run(['find', '.'], cwd=stage, check=True, capture_output=True,
                               text=True).stdout
        with open(out, 'wb') as f:
            subprocess.run(['cpio', '-o', '-H', 'newc', '-R', '0:0', '--quiet'], cwd=stage,
                           input=names.encode(), stdout=f, check=True)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
