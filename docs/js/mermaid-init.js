// Renders every ```mermaid block (a <div class="mermaid"> from pymdownx.superfences) with the
// Mermaid script the site serves itself (js/mermaid.min.js: tools/mermaid_js.py), no CDN.
mermaid.initialize({ startOnLoad: true, securityLevel: "strict", theme: "neutral" });
