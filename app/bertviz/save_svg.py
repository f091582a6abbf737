"""A "Save as SVG" button inside every bertviz view: it saves the drawing as it is on screen (the
head, token and layer picked, the lines drawn), for slides.

bertviz draws with d3 into one or more <svg> elements (the model view: one per head). The script
copies each into one SVG document at its place on screen, white behind, and hands it to the
browser as a download (Streamlit's iframe sandbox allows downloads). Nothing leaves the page.
"""

from __future__ import annotations

import html

BUTTON_ID = "bertexplorer-save-svg"

BUTTON_STYLE = (
    "font-size:13px;padding:3px 10px;margin:0 0 6px 0;border:1px solid #bbb;border-radius:6px;"
    "background:#f6f6f6;cursor:pointer"
)


def button_html(file_name: str) -> str:
    """The button; `file_name` (e.g. bertviz-head-view.svg) is what the download is called."""
    return (
        f'<button type="button" id="{BUTTON_ID}" data-file="{html.escape(file_name, quote=True)}" '
        f'style="{BUTTON_STYLE}" title="Save the view as it is now as an SVG image">Save as SVG</button>'
    )


# One function, no data from the user in it: the hash in the document's CSP allows it to run.
SAVE_SVG_JS = r"""
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  function snapshot() {
    var svgs = Array.prototype.filter.call(document.querySelectorAll("svg"), function (s) {
      var r = s.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && !s.parentNode.closest("svg");
    });
    if (!svgs.length) { return null; }
    var left = Infinity, top = Infinity, right = -Infinity, bottom = -Infinity;
    svgs.forEach(function (s) {
      var r = s.getBoundingClientRect();
      left = Math.min(left, r.left); top = Math.min(top, r.top);
      right = Math.max(right, r.right); bottom = Math.max(bottom, r.bottom);
    });
    var out = document.createElementNS(NS, "svg");
    var w = Math.ceil(right - left), h = Math.ceil(bottom - top);
    out.setAttribute("xmlns", NS);
    out.setAttribute("width", w); out.setAttribute("height", h);
    out.setAttribute("viewBox", "0 0 " + w + " " + h);
    out.setAttribute("font-family", "Helvetica, Arial, sans-serif");
    var bg = document.createElementNS(NS, "rect");
    bg.setAttribute("width", w); bg.setAttribute("height", h); bg.setAttribute("fill", "#ffffff");
    out.appendChild(bg);
    svgs.forEach(function (s) {
      var r = s.getBoundingClientRect();
      var copy = s.cloneNode(true);
      copy.setAttribute("x", r.left - left); copy.setAttribute("y", r.top - top);
      copy.setAttribute("width", r.width); copy.setAttribute("height", r.height);
      out.appendChild(copy);
    });
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(out);
  }
  function save(button) {
    var text = snapshot();
    if (!text) { return; }
    var url = URL.createObjectURL(new Blob([text], {type: "image/svg+xml"}));
    var a = document.createElement("a");
    a.href = url; a.download = button.getAttribute("data-file") || "bertviz.svg";
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  var button = document.getElementById("BUTTON_ID");
  if (button) { button.addEventListener("click", function () { save(button); }); }
  window.bertExplorerSnapshotSvg = snapshot;  // for the browser tests
})();
""".replace("BUTTON_ID", BUTTON_ID)
