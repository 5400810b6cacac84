/* Sorting, filtering, scroll cues and chart tooltips for the leaderboard's pages. No dependencies; works from file://. */
(function () {
  "use strict";

  var each = function (list, fn) { Array.prototype.forEach.call(list, fn); };

  // A cell's sort key: data-value when present ("" = missing), else its text.
  function cellKey(row, index, numeric) {
    var cell = row.cells[index];
    if (!cell) { return null; }
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    if (raw === "" || raw === "\u2014") { return null; }
    if (numeric) {
      var number = parseFloat(raw);
      return isNaN(number) ? null : number;
    }
    return raw.toLowerCase();
  }

  function compareKeys(a, b, numeric, direction) {
    // Missing values go last whichever way the column is sorted.
    if (a === null && b === null) { return 0; }
    if (a === null) { return 1; }
    if (b === null) { return -1; }
    var order = numeric ? a - b : a.localeCompare(b, undefined, { numeric: true });
    return direction === "ascending" ? order : -order;
  }

  // Each body is sorted on its own (untrained baselines stay apart); a body's heading row stays first.
  function sortBody(body, index, numeric, direction) {
    var rows = Array.prototype.filter.call(body.rows, function (row) { return !row.classList.contains("group-head"); });
    var keyed = rows.map(function (row, position) {
      return { row: row, key: cellKey(row, index, numeric), position: position };
    });
    keyed.sort(function (a, b) {
      return compareKeys(a.key, b.key, numeric, direction) || a.position - b.position;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
  }

  function sortBy(table, header) {
    var numeric = header.getAttribute("data-sort") === "num";
    var current = header.getAttribute("aria-sort");
    // Numbers start high-to-low (best first for most metrics); text starts A-Z.
    var first = numeric ? "descending" : "ascending";
    var direction = current === first ? (first === "ascending" ? "descending" : "ascending") : first;
    each(table.tBodies, function (body) { sortBody(body, header.cellIndex, numeric, direction); });
    each(header.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction);
  }

  function enableSorting(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) { return; }
    each(head.cells, function (header) {
      if (!header.hasAttribute("data-sort")) { return; }
      header.tabIndex = 0;
      header.classList.add("sort-header");
      header.addEventListener("click", function () { sortBy(table, header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sortBy(table, header);
        }
      });
    });
  }

  function rowVisible(row, selects, needle, baselines) {
    if (baselines && !baselines.checked && row.classList.contains("is-untrained")) { return false; }
    var visible = Array.prototype.every.call(selects, function (select) {
      return select.value === "" || row.getAttribute("data-" + select.getAttribute("data-filter")) === select.value;
    });
    return visible && (!needle || row.textContent.toLowerCase().indexOf(needle) !== -1);
  }

  function applyFilters(panel, table) {
    var selects = panel.querySelectorAll("select[data-filter]");
    var search = panel.querySelector("input[data-filter-text]");
    var baselines = panel.querySelector("input[data-show-baselines]");
    var needle = search ? search.value.trim().toLowerCase() : "";
    var shown = 0, total = 0;
    each(table.tBodies, function (body) {
      var heads = [], any = false;
      each(body.rows, function (row) {
        if (row.classList.contains("group-head")) { heads.push(row); return; }
        var visible = rowVisible(row, selects, needle, baselines);
        row.hidden = !visible;
        total += 1;
        if (visible) { shown += 1; any = true; }
      });
      heads.forEach(function (row) { row.hidden = !any; });
    });
    var count = panel.querySelector(".filter-count");
    if (count) { count.textContent = shown + " of " + total + " rows"; }
    updateScroll(table.closest(".table-scroller"));
  }

  function enableFilters(panel) {
    var table = document.getElementById(panel.getAttribute("data-for"));
    if (!table || !table.tBodies[0]) { return; }
    var update = function () { applyFilters(panel, table); };
    each(panel.querySelectorAll("select, input"), function (control) {
      control.addEventListener("input", update);
      control.addEventListener("change", update);
    });
    update();
  }

  // Scroll cues: a hint and edge shadows while a table is wider than its box.
  function updateScroll(scroller) {
    if (!scroller) { return; }
    var wrap = scroller.querySelector(".table-wrap");
    var overflows = wrap.scrollWidth > wrap.clientWidth + 1;
    scroller.classList.toggle("overflows", overflows);
    scroller.classList.toggle("at-start", wrap.scrollLeft <= 1);
    scroller.classList.toggle("at-end", wrap.scrollLeft + wrap.clientWidth >= wrap.scrollWidth - 1);
  }

  function enableScrollCues(scroller) {
    var wrap = scroller.querySelector(".table-wrap");
    if (!wrap) { return; }
    wrap.addEventListener("scroll", function () { updateScroll(scroller); }, { passive: true });
    updateScroll(scroller);
  }

  // Tooltips for chart cells: on hover, on keyboard focus, and on tap.
  var tip = null;

  function showTip(target) {
    if (!tip) {
      tip = document.getElementById("tip") || document.body.appendChild(document.createElement("div"));
      tip.className = "tip";
      tip.setAttribute("role", "status");
    }
    var box = target.getBoundingClientRect();
    tip.textContent = target.getAttribute("data-tip");
    tip.hidden = false;
    var left = Math.min(window.scrollX + box.left, window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 8);
    tip.style.left = Math.max(window.scrollX + 4, left) + "px";
    tip.style.top = (window.scrollY + box.bottom + 6) + "px";
  }

  function hideTip() { if (tip) { tip.hidden = true; } }

  function enableTips(element) {
    element.addEventListener("mouseenter", function () { showTip(element); });
    element.addEventListener("mouseleave", hideTip);
    element.addEventListener("focus", function () { showTip(element); });
    element.addEventListener("blur", hideTip);
    element.addEventListener("click", function () { element.focus(); showTip(element); });
  }

  // Arrow keys move the focus between heatmap cells (one tab stop for the whole grid).
  function enableGrid(grid) {
    var cells = Array.prototype.slice.call(grid.querySelectorAll("[data-tip]"));
    var position = function (cell) { return [parseFloat(cell.getAttribute("data-x")), parseFloat(cell.getAttribute("data-y"))]; };
    var moves = { ArrowRight: [1, 0], ArrowLeft: [-1, 0], ArrowDown: [0, 1], ArrowUp: [0, -1] };
    grid.addEventListener("keydown", function (event) {
      var move = moves[event.key];
      if (event.key === "Escape") { hideTip(); return; }
      if (!move || cells.indexOf(event.target) < 0) { return; }
      var from = position(event.target), best = null, bestDistance = Infinity;
      cells.forEach(function (cell) {
        var at = position(cell), dx = at[0] - from[0], dy = at[1] - from[1];
        var along = dx * move[0] + dy * move[1], across = Math.abs(dx * move[1]) + Math.abs(dy * move[0]);
        if (along > 0 && along + 4 * across < bestDistance) { best = cell; bestDistance = along + 4 * across; }
      });
      if (best) {
        event.preventDefault();
        event.target.setAttribute("tabindex", "-1");
        best.setAttribute("tabindex", "0");
        best.focus();
      }
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    each(document.querySelectorAll("table.sortable"), enableSorting);
    each(document.querySelectorAll(".filters[data-for]"), enableFilters);
    each(document.querySelectorAll(".table-scroller"), enableScrollCues);
    each(document.querySelectorAll("[data-tip]"), enableTips);
    each(document.querySelectorAll("svg.heatmap .cells"), enableGrid);
    window.addEventListener("resize", function () {
      each(document.querySelectorAll(".table-scroller"), updateScroll);
    });
  });
})();
