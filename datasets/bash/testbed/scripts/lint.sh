#!/bin/bash
# Static checks; not yet wired into CI.
python3 -m pyflakes src tests
npx eslint src/web
