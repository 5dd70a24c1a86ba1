"""The inline figures of BENCHMARKS.md's prose, by name: SPANS renders a
`<!-- rendered: NAME -->…<!-- /rendered -->` span, ARG_SPANS a
`<!-- rendered: NAME ARG -->…<!-- /rendered -->` one."""
from . import spans_more, spans_store

SPANS = {**spans_store.SPANS, **spans_more.SPANS}
ARG_SPANS = dict(spans_more.ARG_SPANS)
if len(SPANS) != len(spans_store.SPANS) + len(spans_more.SPANS):
    raise RuntimeError("internal: two inline figures share a name")
