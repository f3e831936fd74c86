#!/bin/sh
# `npm test` after the build: the main suite, then the fault-injection suite, which runs (and
# reports) even when the main suite failed: a failure in one must never hide the other's verdict.
# The exit status fails when either failed.
status=0
vitest run || status=1
vitest run --config vitest.faults.config.ts || status=1
exit $status
