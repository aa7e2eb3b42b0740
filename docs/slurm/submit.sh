#!/bin/bash
# Submits a planned AgentRank sweep to Slurm, in order: the calibration job; the shard array after it
# (--dependency=afterok); the construct follow-up job after every shard; the merge after that. Run it
# in the directory that holds the plan file: the jobs run there (Slurm's default working directory is
# the submission directory) and write their logs there. Prints one "step job-id" line per job.
#
#   agentrank-run plan sweeps/full.toml --shards 16 --out plan.json
#   AGENTRANK_SHARD_COUNT=16 docs/slurm/submit.sh
#
# Environment (each optional but the first):
#   AGENTRANK_SHARD_COUNT    the plan's shard count (`plan --shards N`)
#   AGENTRANK_ARRAY          the array indices to submit (default 0-(N-1)); after a shard job failed or
#                            was cancelled, submit again with only its index: finished attempts are kept
#   AGENTRANK_SHARD_SBATCH   extra sbatch options for the shard jobs (e.g. "--cpus-per-task=4 --mem=16G")
#   AGENTRANK_PLAN, AGENTRANK_SHARDS, AGENTRANK_BUNDLES, AGENTRANK_TASKS, AGENTRANK_ROSTER,
#   AGENTRANK_INSTALL_CACHE  paths (defaults plan.json, shards, bundles, tasks, roster, .cache/agentrank)
#
# A job whose dependency can no longer be met (a shard cancelled or failed) is removed by Slurm
# (--kill-on-invalid-dep), so a resubmission never leaves an old merge waiting.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
count=${AGENTRANK_SHARD_COUNT:?set AGENTRANK_SHARD_COUNT to the shard count of the plan (agentrank-run plan --shards N)}
array=${AGENTRANK_ARRAY:-0-$((count - 1))}
read -r -a shard_opts <<< "${AGENTRANK_SHARD_SBATCH:-}"
submit() { sbatch --parsable "$@" | cut -d';' -f1; }
calibrate=$(submit "$here/calibrate.sbatch")
shards=$(submit --dependency="afterok:$calibrate" --kill-on-invalid-dep=yes --array="$array" \
    "${shard_opts[@]}" "$here/shard.sbatch")
construct=$(submit --dependency="afterok:$shards" --kill-on-invalid-dep=yes "$here/construct.sbatch")
merge=$(submit --dependency="afterok:$construct" --kill-on-invalid-dep=yes "$here/merge.sbatch")
printf 'calibrate %s\nshards %s\nconstruct %s\nmerge %s\n' "$calibrate" "$shards" "$construct" "$merge"
