#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Split `luaop check --webhooks` output (stdin) for config/ (make webhooks).

usage: deploy/split_webhooks.py CONFIGURATIONS.yaml [CRD_PATCHES.yaml]

The Mutating/ValidatingWebhookConfigurations go to CONFIGURATIONS.yaml (config/webhook's
resources); the CustomResourceDefinition documents — conversion stanzas, patches for the CRDs,
not CRDs — to CRD_PATCHES.yaml when given (docs/deploying.md, "Conversion webhooks"), else they
are dropped with a note on stderr. The generator's header comment is kept; documents are copied
as text, unchanged.
"""
import re
import sys


def main(argv):
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    text = sys.stdin.read()
    header, _, rest = text.partition("\n---\n")
    header = header.rstrip("\n")
    docs = [d for d in rest.split("\n---\n") if d.strip()] if rest else []
    crd = [d for d in docs if re.search(r"^kind: CustomResourceDefinition$", d, re.M)]
    configs = [d for d in docs if d not in crd]
    with open(argv[0], "w") as f:
        f.write(header + "\n" + "".join("---\n" + d.rstrip("\n") + "\n" for d in configs))
    if crd and len(argv) == 2:
        with open(argv[1], "w") as f:
            f.write(header + "\n" + "".join("---\n" + d.rstrip("\n") + "\n" for d in crd))
    elif crd:
        print(f"split_webhooks: {len(crd)} CRD conversion patch(es) not written (no CRD_PATCHES file given)",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
