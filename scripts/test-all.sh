#!/usr/bin/env bash
# The README's test command runs this after `npm install`: it makes sure the local services and the
# Debian packages the tests need are present, then runs every check and every test.
set -euo pipefail
cd "$(dirname "$0")/.."
export CI="${CI:-1}" NEXT_TELEMETRY_DISABLED=1 TURBO_TELEMETRY_DISABLED=1 OMP_THREAD_LIMIT=1

step() { printf '\n=== %s ===\n' "$*"; }

step "services"
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
pg_isready -h 127.0.0.1 -p 5432
redis-cli -h 127.0.0.1 ping

step "system packages (desktops, browser, OCR fallback)"
if [ -x scripts/install-desktop-deps.sh ]; then bash scripts/install-desktop-deps.sh; fi

step "prisma client"
npm run -s db:generate

step "schema.prisma agrees with the migrations"
npm run -s db:migrate:check

step "typecheck"
npm run -s typecheck

step "lint"
npx biome check .

step "unit, integration and black-box tests (vitest)"
npx vitest run

step "console build"
npm run -s -w @cua/web build

if [ -f e2e/playwright.config.ts ]; then
  step "end-to-end (Playwright, Debian Chromium)"
  npx playwright test -c e2e/playwright.config.ts
fi
echo "all checks passed"
