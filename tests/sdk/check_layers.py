#!/usr/bin/env python3
"""The framework's parts and who includes whom: the public SDK headers include only SDK headers,
and a part of framework/src includes only its own and the parts below it (no cycle). No source of
framework/ or tools/ tells wire formats apart by identity (`== &wire::anthropic_messages()`) or by
name (`format.name().starts_with("openai")`): a caller asks the format (wire/wire_format.hpp), so a
new API needs no change there. With --readme README.md, the README's layout section names every
part (`part/`).
usage: check_layers.py FRAMEWORK_DIR [--print] [--readme README.md]"""
import os, re, sys
# Bottom to top. The SDK headers (include/compactor) are below every part.
LAYERS = ['platform', 'model', 'archive', 'meter', 'summarizer', 'checkers', 'import', 'wire', 'pricing', 'loader', 'host', 'store',
          'session', 'mcp', 'bench', 'calibrate', 'serve']
root = sys.argv[1]
inc = re.compile(r'^#include "([^"]+)"', re.M)
problems, edges = [], {}
sdk = os.path.join(root, 'include', 'compactor')
for name in sorted(os.listdir(sdk)):
    for target in inc.findall(open(os.path.join(sdk, name)).read()):
        if not target.startswith('compactor/'):
            problems.append(f'include/compactor/{name} includes "{target}", which is not an SDK header')
src = os.path.join(root, 'src')
for part in sorted(os.listdir(src)):
    if not os.path.isdir(os.path.join(src, part)):
        problems.append(f'src/{part}: every source belongs in a part folder')
        continue
    if part not in LAYERS:
        problems.append(f'src/{part}: not a known part (add it to LAYERS in {sys.argv[0]})')
        continue
    # A part may have a folder per member (wire/<api>/): its files are the part's.
    names = sorted(os.path.relpath(os.path.join(d, f), os.path.join(src, part))
                   for d, _, fs in os.walk(os.path.join(src, part)) for f in fs)
    for name in names:
        for target in inc.findall(open(os.path.join(src, part, name)).read()):
            other = target.split('/')[0]
            if other == 'compactor':
                continue
            edges.setdefault(part, set()).add(other)
            if other not in LAYERS:
                problems.append(f'src/{part}/{name} includes "{target}" from no part')
            elif LAYERS.index(other) > LAYERS.index(part):
                problems.append(f'src/{part}/{name} includes "{target}": {other} is above {part}')
# Branches on which wire format a caller holds: its address compared with an adapter's, or its name.
identity = re.compile(r'[=!]=\s*&(wire::)?\w+\(\)|\w*format\w*(\(\))?(->|\.)name\(\)\s*(==|!=|\.starts_with|\.ends_with|\.find)')
for top in (src, os.path.join(root, '..', 'tools')):
    for d, _, fs in os.walk(top):
        for f in sorted(fs):
            if not f.endswith(('.cpp', '.hpp')) or 'node_modules' in d:
                continue
            path = os.path.join(d, f)
            for n, line in enumerate(open(path).read().split('\n'), 1):
                if identity.search(line):
                    problems.append(f'{os.path.relpath(path, os.path.join(root, ".."))}:{n}: tells wire formats apart by identity or '
                                    f'name; ask the format instead (WireFormat in wire/wire_format.hpp)')
if '--print' in sys.argv:
    for part in LAYERS:
        below = sorted(edges.get(part, set()) - {part}, key=LAYERS.index)
        print(f'{part:<11} includes: SDK' + (', ' + ', '.join(below) if below else ''))
if '--readme' in sys.argv:
    readme = open(sys.argv[sys.argv.index('--readme') + 1]).read()
    layout = readme[readme.index('## Layout'):]
    layout = layout[:layout.index('\n## ', 1)] if '\n## ' in layout[1:] else layout
    for part in LAYERS:
        if not re.search(r'\b' + part + '/', layout):
            problems.append(f"README.md's layout section does not name the part {part}/")
for p in problems:
    print('FAIL:', p, file=sys.stderr)
sys.exit(1 if problems else 0)
