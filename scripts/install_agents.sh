#!/usr/bin/env bash
# Install the agent CLIs that tests/agents drives through the bridge (Claude Code, Codex CLI, Gemini CLI).
# Usage: scripts/install_agents.sh [DIR]   (default: .ci/agents, ignored by git)
# Versions are pinned to the ones tests/agents was written against; Claude Code 2.1.197 is the last
# release that runs on Node 20 (later ones require Node >= 22).
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:-.ci/agents}"
mkdir -p "$dir"
npm install --prefix "$dir" --no-audit --no-fund --loglevel=error --save-exact \
    @anthropic-ai/claude-code@2.1.197 \
    @openai/codex@0.171.0 \
    @google/gemini-cli@0.61.0
echo "agent CLIs installed in $dir/node_modules/.bin"
