"""plugin_settings_doc.py — the Markdown table of a reporter's settings, made
from the settings description its plugin declares (what `tokenspeed-metrics
plugins --json` prints): one line per key, the fields of an object after it
as `object.field`, a secret's type marked ", secret". docs/plugins/<name>.md
carries this table between the two marker lines; test_plugin_docs.py checks
that it matches.

  python3 test/cli/plugin_settings_doc.py BINARY PLUGIN_DIR REPORTER
prints the table to paste.
"""
import json
import subprocess
import sys

BEGIN = "<!-- settings table: generated from the plugin's settings description -->"
END = "<!-- end of settings table -->"


def settings_of(binary, plugin_dir, reporter):
    listing = json.loads(subprocess.run([binary, "plugins", "--json", "--metrics-plugin-dir",
                                         plugin_dir], check=True, capture_output=True,
                                        text=True).stdout)
    for plugin in listing["plugins"]:
        for entry in plugin["reporters"]:
            if entry["name"] == reporter:
                return entry["settings"]
    raise LookupError(f"no reporter {reporter!r} in {plugin_dir}")


def _rows(settings, prefix=""):
    """Every row, a nested object's fields after it as `object.field`."""
    for row in settings:
        yield prefix, row
        if row.get("type") == "object":
            yield from _rows(row.get("fields", []), prefix + row["key"] + ".")


def markdown_table(settings):
    lines = ["| key | type | default | allowed | description |", "|---|---|---|---|---|"]
    for prefix, row in _rows(settings):
        if "choices" in row:
            allowed = ", ".join(f"`{c}`" for c in row["choices"])
        elif "min" in row:
            allowed = f"{row['min']} to {row['max']}"
        else:
            allowed = ""
        kind = row["type"] + (", secret" if row.get("secret") else "")
        default = f"`{json.dumps(row['default'])}`" if "default" in row else "(required)"
        description = row["description"].replace("|", "\\|")
        lines.append(f"| `{prefix}{row['key']}` | {kind} | {default} | {allowed} | {description} |")
    return "\n".join([BEGIN] + lines + [END])


if __name__ == "__main__":
    print(markdown_table(settings_of(*sys.argv[1:4])))
