# Sourced by the fetch scripts: run downloads side by side (they wait on the
# network, not the CPU), at most SIDE_BY_SIDE_MAX at a time, and fail loudly
# when any of them fails.
#   side_by_side CMD ARGS...   start CMD in the background (waits first when the limit is reached)
#   side_by_side_wait          wait for every one started; exit 1 naming those that failed
SIDE_BY_SIDE_MAX="${SIDE_BY_SIDE_MAX:-6}"
_sbs_pids=()
_sbs_names=()
side_by_side() {
  if (( ${#_sbs_pids[@]} >= SIDE_BY_SIDE_MAX )); then side_by_side_wait; fi
  "$@" &
  _sbs_pids+=("$!")
  _sbs_names+=("$*")
}
side_by_side_wait() {
  local i failed=()
  for i in "${!_sbs_pids[@]}"; do
    wait "${_sbs_pids[$i]}" || failed+=("${_sbs_names[$i]}")
  done
  _sbs_pids=()
  _sbs_names=()
  if (( ${#failed[@]} > 0 )); then
    printf 'error: this fetch failed (its own error is above): %s\n' "${failed[@]}" >&2
    exit 1
  fi
}
