# SPDX-License-Identifier: MIT
"""What tests/integration/test_contract.py loads into Schemathesis (SCHEMATHESIS_HOOKS): preon's check of text
answers (text_answers.py) and one filter of generated requests.

The filter: a path parameter the document types `integer` is sent as its decimal digits. Schemathesis 4.32.5 means
to draw no whole float (2.0) for a value carried as text, where `2.0` is another string than `2` (its
`specs/openapi/_hypothesis.py` says so), yet its fuzzing and stateful phases still send `/fruits/2.0` now and then
(one run in several, by its random seed), which preon answers 400 ("parameter 'id' must be a positive integer"), as
its document's description of the parameter says. Those draws are dropped, not rewritten, so that Hypothesis draws
again; every other value goes through.
"""
import os
import sys

import schemathesis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import text_answers  # noqa: E402,F401 - registers the text-answer check


def decimal_integers(path_parameters):
    """False when a path parameter is a float with nothing after the point (2.0), which Python and Schemathesis
    would spell `2.0` in the URL."""
    return not any(isinstance(v, float) and v.is_integer() for v in (path_parameters or {}).values())


@schemathesis.hook
def filter_path_parameters(ctx, path_parameters):
    return decimal_integers(path_parameters)
