#!/usr/bin/env python3
"""Reduce LiteLLM's model price list to the chat/completion models tracetui prices, as
src/cost/prices.tsv (embedded in the binary). Prices are written in dollars per million
tokens, exactly as the list's decimal numbers say (no float arithmetic).

usage: python3 src/cost/update_prices.py LIST.json "SOURCE DESCRIPTION" > src/cost/prices.tsv

LIST.json is LiteLLM's model_prices_and_context_window.json (in the litellm wheel as
litellm/model_prices_and_context_window_backup.json). Of several context tiers, the lowest
threshold is kept (one model in the list has two). `cache_write` is the 5-minute cache write
price, `cache_write_1h` the 1-hour one (`cache_creation_input_token_cost_above_1hr`);
`web_search` is the price of one web search request (`search_context_cost_per_query`, the
medium context size LiteLLM defaults to), written per million requests like the rest.
"""
import datetime
import decimal
import hashlib
import json
import re
import sys

MODES = {"chat", "completion", "responses"}
COLS = ["model", "provider", "input", "output", "cache_read", "cache_write", "reasoning",
        "tier_above", "tier_input", "tier_output", "tier_cache_read", "tier_cache_write",
        "cache_write_1h", "tier_cache_write_1h", "web_search"]


def per_million(v):
    if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return ""
    d = decimal.Decimal(repr(v)) * 1_000_000
    s = format(d.normalize(), "f")
    return s


def search_price(v):
    """The price of one search: a number, or LiteLLM's prices by search context size."""
    if isinstance(v, dict):
        v = v.get("search_context_size_medium", v.get("search_context_size_low"))
    return v


def main():
    path, source = sys.argv[1], sys.argv[2]
    raw = open(path, "rb").read()
    data = json.loads(raw, parse_float=float)
    rows = []
    for name, v in data.items():
        if not isinstance(v, dict) or v.get("mode") not in MODES:
            continue
        if "input_cost_per_token" not in v and "output_cost_per_token" not in v:
            continue
        tiers = sorted(
            int(m.group(1)) * (1000 if m.group(2) == "k" else 1_000_000)
            for k in v
            if (m := re.fullmatch(r"input_cost_per_token_above_(\d+)([km])_tokens", k))
        )
        tier = tiers[0] if tiers else None
        suffix = ""
        if tier is not None:
            n = tier // 1000
            suffix = f"_above_{n}k_tokens" if n < 1000 else f"_above_{n // 1000}m_tokens"
        cell = lambda k: per_million(v.get(k))
        if any(c in name for c in "\t\n"):
            continue
        rows.append([
            name,
            str(v.get("litellm_provider", "")),
            cell("input_cost_per_token"),
            cell("output_cost_per_token"),
            cell("cache_read_input_token_cost"),
            cell("cache_creation_input_token_cost"),
            cell("output_cost_per_reasoning_token"),
            str(tier) if tier else "",
            cell("input_cost_per_token" + suffix) if tier else "",
            cell("output_cost_per_token" + suffix) if tier else "",
            cell("cache_read_input_token_cost" + suffix) if tier else "",
            cell("cache_creation_input_token_cost" + suffix) if tier else "",
            cell("cache_creation_input_token_cost_above_1hr"),
            cell("cache_creation_input_token_cost_above_1hr" + suffix) if tier else "",
            per_million(search_price(v.get("search_context_cost_per_query"))),
        ])
    out = sys.stdout
    out.write(f"# source: {source}\n")
    out.write(f"# sha256 of the list: {hashlib.sha256(raw).hexdigest()}\n")
    out.write(f"# reduced on {datetime.date.today().isoformat()} by src/cost/update_prices.py: "
              f"{len(rows)} chat/completion models; prices in dollars per million tokens "
              f"(web_search: per million requests)\n")
    out.write("\t".join(COLS) + "\n")
    for r in rows:
        out.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main()
