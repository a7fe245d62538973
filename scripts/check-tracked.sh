#!/bin/sh
# Fails when a file tracked by git is over 1 MB or is a compiled binary (ELF, PE, Mach-O):
# a committed build output or database bloats every clone for ever. It also fails when a
# file cites documents the repository does not hold (SPEC.md, DESIGN §…): the repository's
# docs state their rules themselves. CI runs it first.
set -eu
cd "$(dirname "$0")/.."
found=$(git ls-files -z | xargs -0 -r sh -c '
  for f do
    [ -f "$f" ] || continue
    size=$(wc -c <"$f")
    if [ "$size" -gt 1048576 ]; then echo "tracked file over 1 MB: $f ($size bytes)"; fi
    case $(head -c 4 "$f" | od -An -tx1 | tr -d " \n") in
      7f454c46) echo "tracked compiled binary (ELF): $f" ;;
      4d5a*) echo "tracked compiled binary (PE): $f" ;;
      feedface|feedfacf|cefaedfe|cffaedfe) echo "tracked compiled binary (Mach-O): $f" ;;
    esac
  done
' sh)
cited=$(git grep -nE '(SPEC|DESIGN)(\.md| ?§| [0-9]|'"'"'s)' -- . ':!scripts/check-tracked.sh' || true)
if [ -n "$cited" ]; then
  found="$found${found:+
}documents this repository does not hold are cited:
$cited"
fi
if [ -n "$found" ]; then
  echo "$found" >&2
  exit 1
fi
