"""The programs auto edit may run without asking, and every option each one accepts
(the table behind `read_only`; git's subcommands are in `read_only_git`). An option
not listed here makes the command asked.

Facts checked against Codex's command-safety rules and the programs' manuals:
output options (`sort -o`, `git diff --output`, `tree -o`), options that run
programs (`rg --pre`, `rg --hostname-bin`, `sort --compress-program`, git's
`--ext-diff`/`--textconv`, `-c`/`--config-env`, `--paginate`), `find`'s
`-exec`/`-delete`/`-fprint*` actions and `sed -i`/`w`/`e` are all left out, so
they are asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Operands = Literal["paths", "pattern_then_paths", "strings"]


def word_set(text: str) -> frozenset[str]:
    """The words of `text`: a table's options as the manuals list them."""
    return frozenset(text.split())


_set = word_set  # the tables' short form


@dataclass(frozen=True)
class Program:
    """How one program's arguments read.

    `flags` take no value; `valued` take one (`-n 5`, `-n5`, `--lines=5`,
    `--lines 5`); `optional` are long options with an optional `=value`
    (`--color`, `--color=never`); `path_options` are valued options naming a file
    the program reads. `numeric`: `-20` is a count (head, tail). `operands`: what
    the non-option words are; `max_operands`: more are asked (uniq's second
    operand is a file it writes). `permute`: options may follow operands.
    """

    flags: frozenset[str] = frozenset()
    valued: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    path_options: frozenset[str] = frozenset()
    operands: Operands = "paths"
    numeric: bool = False
    max_operands: int | None = None
    permute: bool = True


_HEAD = Program(
    flags=_set("-q -v -z --quiet --silent --verbose --zero-terminated"),
    valued=_set("-n -c --lines --bytes"),
    numeric=True,
)

PROGRAMS: dict[str, Program] = {
    "cat": Program(
        flags=_set(
            "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends "
            "--number --squeeze-blank --show-tabs --show-nonprinting"
        )
    ),
    "head": _HEAD,
    "tail": _HEAD,
    "wc": Program(
        flags=_set("-c -m -l -L -w --bytes --chars --lines --max-line-length --words"),
        path_options=_set("--files0-from"),
    ),
    "nl": Program(
        flags=_set("-p --no-renumber"),
        valued=_set(
            "-b -d -f -h -i -l -n -s -v -w --body-numbering --section-delimiter "
            "--footer-numbering --header-numbering --line-increment --join-blank-lines "
            "--number-format --number-separator --starting-line-number --number-width"
        ),
    ),
    "tac": Program(flags=_set("-b -r --before --regex"), valued=_set("-s --separator")),
    "rev": Program(),
    "ls": Program(
        flags=_set(
            "-a -A -b -B -c -C -d -f -F -g -G -h -H -i -k -l -L -m -n -N -o -p -q -Q -r -R "
            "-s -S -t -u -U -v -x -X -Z -1 --all --almost-all --escape --ignore-backups "
            "--directory --classify --file-type --no-group --human-readable --si "
            "--dereference-command-line --inode --kibibytes --dereference --numeric-uid-gid "
            "--literal --hide-control-chars --show-control-chars --quote-name --reverse "
            "--recursive --size --full-time --group-directories-first --context --author"
        ),
        valued=_set(
            "-I -T -w --ignore --hide --tabsize --width --sort --time --time-style "
            "--format --block-size --quoting-style --indicator-style"
        ),
        optional=_set("--color --colour --hyperlink"),
    ),
    "tree": Program(
        flags=_set(
            "-a -d -f -i -l -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n -J -X "
            "--noreport --dirsfirst --filesfirst --gitignore --prune --du --si --inodes "
            "--device --ignore-case --matchdirs"
        ),
        valued=_set("-L -P -I --filelimit --timefmt --sort --charset"),
    ),
    "file": Program(
        flags=_set(
            "-b -i -L -h -N -n -r -s -z -0 -k -E --brief --mime --mime-type "
            "--mime-encoding --dereference --no-dereference --no-pad --keep-going --raw "
            "--special-files --uncompress-noreport --print0"
        ),
        valued=_set("-F -e --separator --exclude"),
    ),
    "stat": Program(
        flags=_set("-L -f -t --dereference --file-system --terse"),
        valued=_set("-c --format --printf"),
    ),
    "du": Program(
        flags=_set(
            "-0 -a -b -c -D -h -H -k -l -L -m -P -S -s -x --null --all --apparent-size "
            "--bytes --total --human-readable --si --separate-dirs --summarize "
            "--one-file-system --dereference-args --count-links --inodes"
        ),
        valued=_set("-B -d -t -X --block-size --max-depth --threshold --exclude --time-style"),
        optional=_set("--time"),
        path_options=_set("-X --files0-from --exclude-from"),
    ),
    "df": Program(
        flags=_set(
            "-a -h -H -i -k -l -P -T --all --human-readable --si --inodes --local "
            "--portability --print-type --total --no-sync --sync"
        ),
        valued=_set("-B -t -x --block-size --type --exclude-type"),
        optional=_set("--output"),  # a list of fields, not a file
    ),
    "grep": Program(
        flags=_set(
            "-a -b -c -E -F -G -h -H -i -I -l -L -n -o -P -q -s -T -U -v -V -w -x -y -z -Z "
            "--basic-regexp --extended-regexp --fixed-strings --perl-regexp --ignore-case "
            "--no-ignore-case --invert-match --word-regexp --line-regexp --count "
            "--files-with-matches --files-without-match --only-matching --quiet --silent "
            "--no-messages --byte-offset --with-filename --no-filename --line-number "
            "--initial-tab --null --null-data --text --line-buffered --version --help"
        ),
        valued=_set(
            "-e -m -A -B -C -D --regexp --max-count --after-context --before-context "
            "--context --label --include --exclude --exclude-dir --binary-files --devices"
        ),
        optional=_set("--color --colour"),
        path_options=_set("-f --file --exclude-from"),
        operands="pattern_then_paths",
        numeric=True,  # -3: three lines of context
    ),
    "rg": Program(
        flags=_set(
            "-a -b -c -F -H -i -I -l -n -N -o -p -q -s -S -U -v -w -x -0 "
            "--text --byte-offset --count --count-matches --fixed-strings --with-filename "
            "--no-filename --ignore-case --line-number --no-line-number --only-matching "
            "--pretty --quiet --case-sensitive --smart-case --multiline --multiline-dotall "
            "--invert-match --word-regexp --line-regexp --null --files --files-with-matches "
            "--files-without-match --heading --no-heading --json --vimgrep --column "
            "--no-column --trim --stats --sort-files --no-messages --crlf --passthru --type-list "
            "--no-config --no-unicode --pcre2 --no-pcre2 --auto-hybrid-regex --line-buffered"
        ),
        valued=_set(
            "-e -g -t -T -m -A -B -C -M -r -j -E --regexp --glob --iglob --type --type-not "
            "--max-count --after-context --before-context --context --max-columns --replace "
            "--threads --max-depth --maxdepth --max-filesize --sort --sortr --encoding "
            "--color --colors --context-separator --field-match-separator --path-separator"
        ),
        path_options=_set("-f --file --ignore-file"),
        operands="pattern_then_paths",
    ),
    "diff": Program(
        flags=_set(
            "-a -b -B -c -d -e -E -i -n -N -p -q -s -t -T -u -w -y -Z --text "
            "--ignore-space-change --ignore-blank-lines --ignore-case --minimal --normal "
            "--show-c-function --brief --report-identical-files --expand-tabs --initial-tab "
            "--unified --context --ignore-all-space --side-by-side --new-file "
            "--strip-trailing-cr --ignore-tab-expansion --ignore-trailing-space "
            "--suppress-common-lines --left-column --speed-large-files --ignore-file-name-case"
        ),
        valued=_set(
            "-C -U -W -I -x -F --label --width --ignore-matching-lines --exclude "
            "--show-function-line --tabsize --line-format --horizon-lines"
        ),
        optional=_set("--color"),
        path_options=_set("-X --exclude-from --from-file --to-file"),
    ),
    "cmp": Program(
        flags=_set("-b -l -s --print-bytes --verbose --quiet --silent"),
        valued=_set("-i -n --ignore-initial --bytes"),
    ),
    "sort": Program(
        flags=_set(
            "-b -c -C -d -f -g -h -i -M -m -n -r -R -s -u -V -z --ignore-leading-blanks "
            "--dictionary-order --ignore-case --general-numeric-sort --ignore-nonprinting "
            "--month-sort --human-numeric-sort --numeric-sort --random-sort --reverse "
            "--version-sort --merge --stable --unique --zero-terminated --debug"
        ),
        valued=_set("-k -t -S --key --field-separator --buffer-size --parallel --sort"),
        optional=_set("--check"),
        path_options=_set("--files0-from --random-source"),
    ),
    "uniq": Program(
        flags=_set("-c -d -D -i -u -z --count --repeated --ignore-case --unique --zero-terminated"),
        valued=_set("-f -s -w --skip-fields --skip-chars --check-chars"),
        optional=_set("--all-repeated --group"),
        max_operands=1,  # a second operand is a file uniq writes
    ),
    "cut": Program(
        flags=_set("-n -s -z --complement --only-delimited --zero-terminated"),
        valued=_set("-b -c -d -f --bytes --characters --delimiter --fields --output-delimiter"),
    ),
    "paste": Program(
        flags=_set("-s -z --serial --zero-terminated"), valued=_set("-d --delimiters")
    ),
    "tr": Program(
        flags=_set("-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1"),
        operands="strings",
    ),
    "base64": Program(
        flags=_set("-d -i --decode --ignore-garbage"), valued=_set("-w --wrap"), max_operands=1
    ),
    "sha256sum": Program(flags=_set("-b -t -z --binary --text --tag --zero")),
    "sha1sum": Program(flags=_set("-b -t -z --binary --text --tag --zero")),
    "md5sum": Program(flags=_set("-b -t -z --binary --text --tag --zero")),
    "echo": Program(flags=_set("-n -e -E"), operands="strings", permute=False),
    "printf": Program(operands="strings", permute=False),
    "seq": Program(
        flags=_set("-w --equal-width"),
        valued=_set("-f -s --format --separator"),
        operands="strings",
    ),
    "expr": Program(operands="strings", permute=False),
    "true": Program(operands="strings", permute=False),
    "false": Program(operands="strings", permute=False),
    "pwd": Program(flags=_set("-L -P"), max_operands=0),
    "whoami": Program(max_operands=0),
    "id": Program(
        flags=_set("-g -G -n -r -u -z --group --groups --name --real --user --zero"),
        operands="strings",
    ),
    "uname": Program(
        flags=_set(
            "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release "
            "--kernel-version --machine --processor --hardware-platform --operating-system"
        ),
        max_operands=0,
    ),
    "which": Program(flags=_set("-a"), operands="strings"),
    "basename": Program(
        flags=_set("-a -z --multiple --zero"), valued=_set("-s --suffix"), operands="strings"
    ),
    "dirname": Program(flags=_set("-z --zero"), operands="strings"),
    "realpath": Program(
        flags=_set(
            "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical "
            "--physical --quiet --strip --no-symlinks --zero"
        ),
        valued=_set("--relative-to --relative-base"),
    ),
    "readlink": Program(
        flags=_set(
            "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing "
            "--canonicalize-missing --no-newline --quiet --silent --verbose --zero"
        )
    ),
    "date": Program(
        flags=_set("-u -R --utc --universal --rfc-email --debug"),
        valued=_set("-d --date"),
        optional=_set("--iso-8601 --rfc-3339"),
        path_options=_set("-r --reference"),
        operands="strings",  # only `+FORMAT`: checked by the classifier
        max_operands=1,
    ),
}
"""Programs whose options and operands are fully described here; `git`, `find`,
`sed`, `awk`, `jq` and the wrappers have rules of their own in `read_only`."""

FIND_TESTS_NO_ARG = _set(
    "-print -print0 -ls -prune -quit -empty -true -false -readable -writable -executable "
    "-nouser -nogroup -depth -xdev -mount -noleaf -follow -daystart -ignore_readdir_race "
    "-noignore_readdir_race -a -o -and -or -not ! ( ) ,"
)
FIND_TESTS_ONE_ARG = _set(
    "-name -iname -path -ipath -wholename -iwholename -regex -iregex -type -xtype -size "
    "-mtime -mmin -atime -amin -ctime -cmin -perm -user -group -uid -gid -links -inum -lname "
    "-ilname -maxdepth -mindepth -regextype -fstype -used -printf"
)
FIND_PATH_TESTS = _set("-newer -anewer -cnewer -samefile")
"""`find` primaries: tests and the actions that only print. `-exec`, `-execdir`,
`-ok`, `-okdir`, `-delete`, `-fprint`, `-fprint0`, `-fprintf` and `-fls` are absent."""
