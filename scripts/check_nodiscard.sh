#!/usr/bin/env bash
# Every function that returns absl::Status or absl::StatusOr<T> is
# [[nodiscard]]: Debian 12's Abseil does not mark the types themselves, so a
# dropped status compiles silently unless the function is.
#
# Checked over every C++/CUDA source under ROOT (default: the repository
# this script sits in):
#   - a declaration in a header, member or free, needs the attribute;
#   - in a .cc/.cu file, a member of a class defined there (an indented
#     declaration) needs it; so does a function at namespace scope whose
#     name is not qualified (a helper in an anonymous namespace, or the
#     definition of a free function), unless a header declares a function
#     of that name with it; out-of-class member definitions (Foo::Bar)
#     take it from their declaration.
# The attribute goes before the declaration (`[[nodiscard]] static
# absl::Status Load(...)`) or on the line above it. Lambdas and
# std::function types are not declarations and are not checked.
#
# Usage: scripts/check_nodiscard.sh [ROOT]
# Prints each offending declaration as "file:line: ..." and exits 1 when
# there is one; prints a one-line summary and exits 0 otherwise.
set -euo pipefail
ROOT=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$ROOT"

sources=$(for dir in common security observability collectives study jobspec models server worker cli tests; do
  [ -d "$dir" ] && find "$dir" -type f \( -name '*.h' -o -name '*.cc' \
    -o -name '*.cu' -o -name '*.cuh' \)
done | sort)
if [ -z "$sources" ]; then
  echo "check_nodiscard: no sources found under $ROOT" >&2
  exit 1
fi

# Finds the declarations of functions returning a status, one per line:
# "file<TAB>line<TAB>has_nodiscard<TAB>name<TAB>indented". The return type
# and the name
# may be on one line or on two (a long StatusOr<...> alone on its line).
# shellcheck disable=SC2086
declarations=$(awk '
  function report(file, line, attr, name, indented) {
    printf "%s\t%d\t%d\t%s\t%d\n", file, line, attr, name, indented
  }
  # The attribute, qualifiers, the status type; RSTART/RLENGTH of the
  # match, the rest of the line in `rest`.
  function status_head(text) {
    if (!match(text, /^[[:space:]]*(\[\[nodiscard\]\][[:space:]]*)?((virtual|static|inline|constexpr|explicit)[[:space:]]+)*(\[\[nodiscard\]\][[:space:]]*)?absl::Status(Or<[^(]*>)?([[:space:]]|$)/))
      return 0
    rest = substr(text, RSTART + RLENGTH)
    return 1
  }
  FNR == 1 { pending = 0; previous = "" }
  {
    text = $0
    if (pending) {
      pending = 0
      if (match(text, /^[[:space:]]*[A-Za-z_][A-Za-z_0-9:]*\(/)) {
        name = substr(text, RSTART, RLENGTH - 1)
        gsub(/[[:space:]]/, "", name)
        report(FILENAME, FNR - 1, pending_attr, name, pending_indented)
      }
    }
    if (text ~ /^[[:space:]]*\/\//) { previous = text; next }
    if (status_head(text)) {
      attr = (text ~ /\[\[nodiscard\]\]/ ||
              previous ~ /\[\[nodiscard\]\][[:space:]]*$/) ? 1 : 0
      indented = (text ~ /^[[:space:]]/) ? 1 : 0
      if (rest ~ /^[[:space:]]*$/) {
        pending = 1
        pending_attr = attr
        pending_indented = indented
      } else if (match(rest, /^[[:space:]]*[A-Za-z_][A-Za-z_0-9:]*\(/)) {
        name = substr(rest, RSTART, RLENGTH - 1)
        gsub(/[[:space:]]/, "", name)
        report(FILENAME, FNR, attr, name, indented)
      }
    }
    previous = text
  }' $sources)

awk -F'\t' '
  # A name declared [[nodiscard]] in a header covers its definitions.
  $1 ~ /\.(h|cuh)$/ && $3 == 1 { covered[$4] = 1 }
  { rows[++n] = $0 }
  END {
    bad = 0
    for (i = 1; i <= n; i++) {
      split(rows[i], f, "\t")
      file = f[1]; line = f[2]; attr = f[3]; name = f[4]; indented = f[5]
      if (attr == 1) continue
      if (name ~ /::/) {
        # An out-of-class member definition: its declaration holds the
        # attribute. In a header it is still a declaration to mark when it
        # is the only one, which the class declaration rules out.
        continue
      }
      if (file !~ /\.(h|cuh)$/ && !indented && (name in covered)) continue
      printf "%s:%s: %s returns a status but is not [[nodiscard]]; a dropped status would compile silently\n", file, line, name
      bad++
    }
    if (bad > 0) {
      printf "check_nodiscard: %d function(s) returning absl::Status or StatusOr lack [[nodiscard]]\n", bad
      exit 1
    }
    printf "check_nodiscard: %d status-returning declarations, all [[nodiscard]]\n", n
  }' <<<"$declarations"
