/* Shareable views: every table's sort, filters, search and chosen columns live in the page address (its query:
   "<table>.sort", "<table>.f.<key>", "<table>.q", "<table>.base", "<table>.cols") and come back when the address
   is opened; a column picker for tables wider than their box; an anchor link on every heading; the confusion
   matrix cells of per-image pages filter their rows. Loads after leaderboard.js; no dependencies; works from file://. */
(function () {
  "use strict";

  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };
  var params = new URLSearchParams(window.location.search);
  var restoring = false;

  function slug(text) {
    return text.toLowerCase().replace(/[\u2191\u2193\u25b2\u25bc]/g, "").trim()
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "column";
  }

  // Each header cell gets a stable key (data-col): its text as a slug, numbered when repeated.
  function columnKeys(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) { return []; }
    var seen = {};
    return Array.prototype.map.call(head.cells, function (cell) {
      if (!cell.hasAttribute("data-col")) {
        var key = slug(cell.textContent);
        seen[key] = (seen[key] || 0) + 1;
        cell.setAttribute("data-col", seen[key] > 1 ? key + "-" + seen[key] : key);
      }
      return cell.getAttribute("data-col");
    });
  }

  function save() {
    if (restoring) { return; }
    var query = params.toString();
    var address = window.location.pathname + (query ? "?" + query : "") + window.location.hash;
    try { window.history.replaceState(null, "", address); } catch (error) { /* some browsers refuse file:// */ }
  }

  function setParam(name, value) {
    if (value === null || value === "") { params.delete(name); } else { params.set(name, value); }
    save();
  }

  // Sorting: the header's key and direction after each click; restored by clicking the header (one or two times).
  function keepSort(table) {
    each(table.tHead ? table.tHead.rows[0].cells : [], function (header) {
      if (!header.hasAttribute("data-sort")) { return; }
      var record = function () {
        var direction = header.getAttribute("aria-sort");
        if (direction) { setParam(table.id + ".sort", header.getAttribute("data-col") + "." + direction.slice(0, 4)); }
      };
      header.addEventListener("click", record);
      header.addEventListener("keydown", function (event) { if (event.key === "Enter" || event.key === " ") { record(); } });
    });
    var wanted = params.get(table.id + ".sort");
    if (!wanted) { return; }
    var parts = wanted.split("."), direction = parts.pop() === "asce" ? "ascending" : "descending";
    var header = table.tHead.querySelector('th[data-col="' + CSS.escape(parts.join(".")) + '"][data-sort]');
    for (var i = 0; header && i < 2 && header.getAttribute("aria-sort") !== direction; i += 1) { header.click(); }
  }

  // Filters, search and the baselines switch of a table's filter panel.
  function keepFilters(panel) {
    var id = panel.getAttribute("data-for");
    var controls = [];
    each(panel.querySelectorAll("select[data-filter]"), function (c) { controls.push([c, id + ".f." + c.getAttribute("data-filter")]); });
    each(panel.querySelectorAll("input[data-filter-text]"), function (c) { controls.push([c, id + ".q"]); });
    each(panel.querySelectorAll("input[data-show-baselines]"), function (c) { controls.push([c, id + ".base"]); });
    controls.forEach(function (pair) {
      var control = pair[0], name = pair[1], isBox = control.type === "checkbox";
      if (params.has(name)) {
        if (isBox) { control.checked = params.get(name) === "1"; } else { control.value = params.get(name); }
        control.dispatchEvent(new Event("change"));
      }
      var record = function () {
        setParam(name, isBox ? (control.checked === control.defaultChecked ? null : (control.checked ? "1" : "0")) : control.value);
      };
      control.addEventListener("input", record);
      control.addEventListener("change", record);
    });
  }

  // Columns: hide or show a column's cells; rows whose cells do not line up with the header (group heads) are left.
  function showColumn(table, index, shown) {
    var width = table.tHead.rows[0].cells.length;
    each(table.rows, function (row) {
      if (row.cells.length === width) { row.cells[index].classList.toggle("col-off", !shown); }
    });
  }

  function fits(wrap) { return wrap.scrollWidth <= wrap.clientWidth + 1; }

  // The column that holds a table's main score: the header marked data-main, else the first numeric one.
  function mainColumn(table) {
    var marked = table.tHead.querySelector("th[data-main]") || table.tHead.querySelector('th[data-sort="num"]');
    return marked ? marked.cellIndex : 1;
  }

  // The default: the columns that fit the box, hidden from the right; the first column, the main score and the
  // columns marked data-keep (what a score rests on) stay.
  function fitColumns(table, wrap, boxes) {
    var heads = table.tHead.rows[0].cells;
    for (var i = boxes.length - 1; i >= 0 && !fits(wrap); i -= 1) {
      if (boxes[i] && !heads[i].hasAttribute("data-keep")) { boxes[i].checked = false; showColumn(table, i, false); }
    }
  }

  function columnPicker(table) {
    var scroller = table.closest(".table-scroller"), wrap = scroller && scroller.querySelector(".table-wrap");
    var keys = columnKeys(table);
    if (!wrap || keys.length < 4 || (fits(wrap) && !params.has(table.id + ".cols"))) { return; }
    var picker = document.createElement("details"), list = document.createElement("div");
    picker.className = "column-picker";
    picker.innerHTML = "<summary>Columns</summary>";
    list.className = "column-list";
    picker.appendChild(list);
    scroller.insertBefore(picker, scroller.firstChild);
    var heads = table.tHead.rows[0].cells, boxes = [], main = mainColumn(table);
    keys.forEach(function (key, index) {
      if (index === 0 || index === main) { boxes.push(null); return; }
      var label = document.createElement("label"), box = document.createElement("input");
      box.type = "checkbox";
      box.checked = true;
      box.value = key;
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + heads[index].textContent.replace(/[\u2191\u2193]/g, "").trim()));
      list.appendChild(label);
      boxes.push(box);
      box.addEventListener("change", function () {
        showColumn(table, index, box.checked);
        setParam(table.id + ".cols", boxes.filter(function (b) { return b && b.checked; }).map(function (b) { return b.value; }).join(","));
        scroller.dispatchEvent(new Event("columns"));
      });
    });
    var chosen = params.get(table.id + ".cols");
    if (chosen !== null) {
      var on = chosen.split(",");
      boxes.forEach(function (box, index) { if (box) { box.checked = on.indexOf(box.value) >= 0; showColumn(table, index, box.checked); } });
    } else {
      fitColumns(table, wrap, boxes);
    }
    window.dispatchEvent(new Event("resize"));  // leaderboard.js updates the scroll cues
  }

  // The sticky header's height, for the scroll margin of link targets (style.css): it wraps to more lines on a
  // narrow desktop window than on a phone, where its navigation scrolls on one line.
  function keepHeaderHeight() {
    var header = document.querySelector(".site-header");
    if (!header) { return; }
    var update = function () {
      document.documentElement.style.setProperty("--header-h", header.getBoundingClientRect().height + "px");
    };
    update();
    window.addEventListener("resize", update);
  }

  // An anchor link on every heading of the page: a heading that opens a section with an id takes that id (the
  // section's links, such as the navigation's #tasks, land on the heading); others get an id made from their
  // text, numbered where the page has it already.
  function anchorHeadings() {
    var taken = {};
    each(document.querySelectorAll("main h1, main h2, main h3"), function (heading) {
      var section = heading.parentElement;
      if (!heading.id && section && section.tagName === "SECTION" && section.id && section.firstElementChild === heading) {
        heading.id = section.id;
        section.removeAttribute("id");
      }
      if (!heading.id) {
        var base = slug(heading.textContent), id = base, n = 1;
        while (taken[id] || document.getElementById(id)) { n += 1; id = base + "-" + n; }
        heading.id = id;
      }
      taken[heading.id] = true;
      var link = document.createElement("a");
      link.className = "anchor";
      link.href = "#" + heading.id;
      link.setAttribute("aria-label", "Link to this section");
      link.textContent = "#";
      heading.appendChild(link);
    });
    var target = window.location.hash && document.getElementById(decodeURIComponent(window.location.hash.slice(1)));
    if (target) { target.scrollIntoView(); }
  }

  // Per-image pages: a confusion-matrix cell sets the table's cell filter (a second click clears it).
  function cellButtons() {
    var select = document.querySelector('.filters select[data-filter="cell"]');
    if (!select) { return; }
    var buttons = document.querySelectorAll("button.cell-filter");
    var mark = function () { each(buttons, function (b) { b.setAttribute("aria-pressed", String(b.getAttribute("data-cell") === select.value)); }); };
    each(buttons, function (button) {
      button.addEventListener("click", function () {
        select.value = select.value === button.getAttribute("data-cell") ? "" : button.getAttribute("data-cell");
        select.dispatchEvent(new Event("change"));
      });
    });
    select.addEventListener("change", mark);
    mark();
  }

  document.addEventListener("DOMContentLoaded", function () {
    restoring = true;
    keepHeaderHeight();
    each(document.querySelectorAll("table[id]"), columnKeys);
    cellButtons();
    each(document.querySelectorAll(".filters[data-for]"), keepFilters);
    each(document.querySelectorAll("table.sortable[id]"), keepSort);
    each(document.querySelectorAll(".table-scroller table[id]"), columnPicker);
    anchorHeadings();
    restoring = false;
    save();
  });
})();
