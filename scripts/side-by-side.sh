# Sourced by the fetch scripts: run downloads side by side (they wait on the
# network, not the CPU), at most SIDE_BY_SIDE_MAX at a time, and fail loudly
# when any of them fails.
#   side_by_side CMD ARGS...   start CMD in the background (when the limit is
#                              reached, first waits for any one to end)
#   side_by_side_wait          wait for every one started; exit 1 naming those that failed
# A pool, not batches: one slow download (a gemini-cli release) does not hold
# back the ones queued after it.
SIDE_BY_SIDE_MAX="${SIDE_BY_SIDE_MAX:-6}"
_sbs_pids=()
_sbs_names=()
_sbs_failed=()
# Wait for any one of the running commands to end; note it if it failed.
_sbs_reap_one() {
  local ended="" rc=0 i
  wait -n -p ended "${_sbs_pids[@]}" || rc=$?
  for i in "${!_sbs_pids[@]}"; do
    if [[ "${_sbs_pids[$i]}" == "$ended" ]]; then
      (( rc == 0 )) || _sbs_failed+=("${_sbs_names[$i]}")
      unset '_sbs_pids[i]' '_sbs_names[i]'
      _sbs_pids=("${_sbs_pids[@]}")
      _sbs_names=("${_sbs_names[@]}")
      return 0
    fi
  done
  # No pid came back (none was running): nothing to note.
  _sbs_pids=()
  _sbs_names=()
}
side_by_side() {
  while (( ${#_sbs_pids[@]} >= SIDE_BY_SIDE_MAX )); do _sbs_reap_one; done
  "$@" &
  _sbs_pids+=("$!")
  _sbs_names+=("$*")
}
side_by_side_wait() {
  while (( ${#_sbs_pids[@]} > 0 )); do _sbs_reap_one; done
  if (( ${#_sbs_failed[@]} > 0 )); then
    printf 'error: this fetch failed (its own error is above): %s\n' "${_sbs_failed[@]}" >&2
    _sbs_failed=()
    exit 1
  fi
}
