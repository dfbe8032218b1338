#!/usr/bin/env bash
# Installs the pinned Claude Code CLI into the repo's git-ignored cache (once)
# and prints the path of its binary. Usage: .ci/claude-code.sh VERSION
set -euo pipefail
version=${1:?usage: claude-code.sh VERSION}
root=$(cd "$(dirname "$0")/.." && pwd)
prefix="$root/.cache/claude-code/$version"
bin="$prefix/node_modules/@anthropic-ai/claude-code/bin/claude.exe"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$version "; then
	echo "$bin"
	exit 0
fi
command -v npm >/dev/null || { echo "claude-code.sh: npm is required to install @anthropic-ai/claude-code@$version" >&2; exit 1; }
mkdir -p "$prefix"
echo "installing @anthropic-ai/claude-code@$version into $prefix" >&2
# The package's postinstall copies the native binary from the platform
# package over bin/claude.exe; --foreground-scripts keeps its output visible.
npm install --prefix "$prefix" --no-audit --no-fund --no-save --loglevel=error \
	"@anthropic-ai/claude-code@$version" >&2
"$bin" --version >/dev/null || { echo "claude-code.sh: $bin does not run" >&2; exit 1; }
echo "$bin"
