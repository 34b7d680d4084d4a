#!/usr/bin/env python3
"""The include-rule checker (include_rules.py) finds each kind of violation in a small
source tree written here, and passes a tree that keeps the rules."""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import include_rules  # noqa: E402


def write_tree(root, files):
    for path, text in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


class IncludeRulesTest(unittest.TestCase):
    def check(self, files):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "src")
            write_tree(src, files)
            return include_rules.check(src)

    def test_a_tree_that_keeps_the_rules_is_clean(self):
        self.assertEqual(self.check({
            "main.cc": '#include "gateway/cli.h"\n#include "sim/cli.h"\n',
            "gateway/front/messages.cc": '#include "api/anthropic/messages_request.h"\n'
                                         '#include "gateway/context.h"\n#include <vector>\n',
            "sim/simulation.cc": '#include "api/openai/request.h"\n#include "engine/engine.h"\n',
            "http/server.cc": '#include "api/openai/error.h"\n#include "session.h"\n',
            "api/sse.cc": '#include "common/status.h"\n',
        }), [])

    def test_shell_including_another_shell_fails(self):
        v = self.check({"enginesim/anthropic_api.cc": '\n#include "gateway/anthropic/x.h"\n',
                        "gateway/x.h": ""})
        self.assertEqual(len(v), 1)
        self.assertIn("enginesim/anthropic_api.cc:2", v[0])
        self.assertIn("shell 'enginesim' includes another shell ('gateway')", v[0])

    def test_core_including_a_shell_fails(self):
        v = self.check({"policy/cli.cc": '#include "gateway/config.h"\n', "gateway/config.h": ""})
        self.assertEqual(len(v), 1)
        self.assertIn("core 'policy' includes a shell ('gateway')", v[0])

    def test_core_including_an_unlisted_core_fails(self):
        v = self.check({"routing/router.h": '#include "engine/engine.h"\n',
                        "engine/engine.h": ""})
        self.assertEqual(len(v), 1)
        self.assertIn("core 'routing' may include only", v[0])
        self.assertIn("not 'engine'", v[0])

    def test_an_unclassified_folder_fails(self):
        v = self.check({"newthing/a.cc": '#include "common/status.h"\n'})
        self.assertEqual(v, ["src/newthing/: folder not in the include rule table "
                             "(tests/layering/include_rules.py LAYERS)"])


if __name__ == "__main__":
    unittest.main()
