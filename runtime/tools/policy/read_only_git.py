"""git's read-only use for auto edit (the table behind `read_only`'s git rule): the
global flags allowed before the subcommand and each read-only subcommand's options,
written as `read_only_programs.Program`s. Anything not listed is asked.
"""

from __future__ import annotations

from runtime.tools.policy.read_only_programs import Program
from runtime.tools.policy.read_only_programs import word_set as _set

GIT_GLOBAL_FLAGS = _set(
    "-P --no-pager --no-replace-objects --literal-pathspecs --glob-pathspecs "
    "--noglob-pathspecs --icase-pathspecs --no-optional-locks --no-advice"
)

_DIFF = (
    "-p -u -s -z -R -a -w -b -W -D --patch --no-patch --raw --patch-with-raw "
    "--patch-with-stat --numstat --shortstat --summary --name-only --name-status "
    "--compact-summary --minimal --patience --histogram --no-color --no-renames "
    "--rename-empty --no-rename-empty --full-index --binary --check --text "
    "--ignore-space-at-eol --ignore-space-change --ignore-all-space --ignore-blank-lines "
    "--ignore-cr-at-eol --function-context --exit-code --quiet --no-ext-diff --no-textconv "
    "--no-prefix --default-prefix --find-copies-harder --irreversible-delete "
    "--ita-invisible-in-index --ita-visible-in-index --no-relative --indent-heuristic "
    "--no-indent-heuristic --no-color-moved --no-color-moved-ws --pickaxe-all "
    "--pickaxe-regex --full-name"
)
_DIFF_VALUED = (
    "-U -S -G -I -O -l --unified --inter-hunk-context --diff-algorithm --diff-filter "
    "--word-diff-regex --find-object --src-prefix --dst-prefix --line-prefix --stat-width "
    "--stat-name-width --stat-graph-width --stat-count --anchored --ws-error-highlight "
    "--ignore-matching-lines --output-indicator-new --output-indicator-old "
    "--output-indicator-context --color-moved-ws"
)
_DIFF_OPTIONAL = (
    "--stat --dirstat --abbrev --relative --color --color-words --color-moved --word-diff "
    "--submodule --ignore-submodules --find-renames --find-copies --break-rewrites"
)
_LOG = (
    "--oneline --graph --all --no-decorate --source --first-parent --no-merges --merges "
    "--reverse --date-order --author-date-order --topo-order --follow --abbrev-commit "
    "--no-abbrev-commit --full-history --simplify-by-decoration --ancestry-path --left-right "
    "--cherry-pick --cherry-mark --cherry --boundary --walk-reflogs --show-signature --no-notes "
    "--use-mailmap --mailmap --log-size --parents --children --do-walk --regexp-ignore-case "
    "--extended-regexp --fixed-strings --perl-regexp --all-match --invert-grep --relative-date "
    "--full-diff --cc --dd --remerge-diff --no-diff-merges --no-expand-tabs --no-walk -g -i -E "
    "-F -P -m -c -t"
)
_LOG_VALUED = (
    "-n -L --max-count --skip --since --after --until --before --author --committer --grep "
    "--date --encoding --max-parents --min-parents --diff-merges --since-as-filter"
)
_LOG_OPTIONAL = "--decorate --branches --tags --remotes --notes --pretty --format --expand-tabs"

_DIFF_PROGRAM = Program(
    flags=_set(_DIFF + " --cached --staged --merge-base --no-index"),
    valued=_set(_DIFF_VALUED),
    optional=_set(_DIFF_OPTIONAL + " -M -C -B"),
)
_LOG_PROGRAM = Program(
    flags=_set(_DIFF + " " + _LOG),
    valued=_set(_DIFF_VALUED + " " + _LOG_VALUED),
    optional=_set(_DIFF_OPTIONAL + " " + _LOG_OPTIONAL + " -M -C -B"),
    numeric=True,  # git log -5
)

GIT_SUBCOMMANDS: dict[str, Program] = {
    "status": Program(
        flags=_set(
            "-s -b -v -z --short --branch --long --verbose --show-stash --ahead-behind "
            "--no-ahead-behind --renames --no-renames --no-column"
        ),
        optional=_set("--porcelain --untracked-files --ignored --ignore-submodules --column -u"),
    ),
    "diff": _DIFF_PROGRAM,
    "log": _LOG_PROGRAM,
    "show": _LOG_PROGRAM,
    "branch": Program(
        flags=_set(
            "-a -r -v -vv -l -i --all --remotes --verbose --list --show-current "
            "--ignore-case --omit-empty --no-column"
        ),
        valued=_set("--contains --no-contains --merged --no-merged --points-at --sort --format"),
        optional=_set("--color --abbrev --column"),
        operands="strings",  # patterns, only with --list (checked by the classifier)
    ),
    "rev-parse": Program(
        flags=_set(
            "--show-toplevel --git-dir --absolute-git-dir --git-common-dir --is-inside-work-tree "
            "--is-inside-git-dir --is-bare-repository --is-shallow-repository --show-prefix "
            "--show-cdup --symbolic --symbolic-full-name --verify -q --quiet --all --branches "
            "--tags --remotes --show-superproject-working-tree --show-object-format --sq "
            "--not --revs-only --no-revs --flags --no-flags"
        ),
        optional=_set("--short --abbrev-ref"),
        operands="strings",
    ),
    "ls-files": Program(
        flags=_set(
            "-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others "
            "--ignored --stage --unmerged --killed --directory --no-empty-directory "
            "--exclude-standard --full-name --error-unmatch --recurse-submodules --eol "
            "--deduplicate --sparse"
        ),
        valued=_set("-x --exclude --with-tree --format"),
        optional=_set("--abbrev"),
        path_options=_set("-X --exclude-from --exclude-per-directory"),
    ),
    "ls-tree": Program(
        flags=_set(
            "-d -r -t -l -z --long --name-only --name-status --object-only --full-name --full-tree"
        ),
        valued=_set("--format"),
        optional=_set("--abbrev"),
        operands="strings",
    ),
    "blame": Program(
        flags=_set(
            "-b -c -l -t -s -e -f -n -p -w --root --show-stats --porcelain --line-porcelain "
            "--incremental --show-name --show-number --show-email --score-debug -M -C"
        ),
        valued=_set("-L -S --date --ignore-rev --abbrev"),
        optional=_set("--color-lines --color-by-age"),
        path_options=_set("--contents --ignore-revs-file"),
    ),
    "describe": Program(
        flags=_set("--tags --always --long --exact-match --all --contains --first-parent --debug"),
        valued=_set("--match --exclude --candidates"),
        optional=_set("--abbrev --dirty --broken"),
        operands="strings",
    ),
    "merge-base": Program(
        flags=_set("-a --all --octopus --independent --is-ancestor"), operands="strings"
    ),
    "shortlog": Program(
        flags=_set("-n -s -e -c --numbered --summary --email --committer --all --no-merges"),
        valued=_set("--group --format"),
        operands="strings",
    ),
}
"""git's read-only subcommands and their options. Global `-c`/`--config-env`,
`--git-dir`/`--work-tree`, `--exec-path` and `-p`/`--paginate` are not listed, so asked."""
