// Zoom and pan for markerwave's space-time diagram (conformance/export):
// the wheel, the buttons and + - 0 f zoom, dragging and the arrow keys
// pan, by changing the SVG's viewBox; clicking a cut in the legend
// highlights its snapshot. It requests nothing.
(function () {
  "use strict";
  var svg = document.getElementById("diagram");
  var box = document.getElementById("viewport");
  if (!svg || !box || !svg.viewBox) {
    return;
  }
  var W = svg.viewBox.baseVal.width, H = svg.viewBox.baseVal.height;
  var v = { x: 0, y: 0, s: 1 }; // top-left corner shown, screen px per unit
  box.className = "zoomable";

  function apply() {
    var w = box.clientWidth, h = box.clientHeight;
    svg.setAttribute("width", w);
    svg.setAttribute("height", h);
    svg.setAttribute("viewBox", v.x + " " + v.y + " " + w / v.s + " " + h / v.s);
  }
  // zoom by factor f, keeping the point under (cx, cy) in place.
  function zoom(f, cx, cy) {
    var s = Math.min(8, Math.max(0.01, v.s * f));
    v.x += cx / v.s - cx / s;
    v.y += cy / v.s - cy / s;
    v.s = s;
    apply();
  }
  function pan(ddx, ddy) {
    v.x -= ddx / v.s;
    v.y -= ddy / v.s;
    apply();
  }
  function fit() {
    v.s = Math.min(box.clientWidth / W, box.clientHeight / H);
    v.x = 0;
    v.y = 0;
    apply();
  }
  function reset() {
    v.s = 1;
    v.x = 0;
    v.y = 0;
    apply();
  }
  var actions = {
    "in": function () { zoom(1.25, box.clientWidth / 2, box.clientHeight / 2); },
    "out": function () { zoom(0.8, box.clientWidth / 2, box.clientHeight / 2); },
    "fit": fit,
    "reset": reset
  };

  box.addEventListener("wheel", function (e) {
    e.preventDefault();
    var r = box.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  var drag = null;
  box.addEventListener("pointerdown", function (e) {
    drag = { x: e.clientX, y: e.clientY };
  });
  window.addEventListener("pointermove", function (e) {
    if (drag) {
      pan(e.clientX - drag.x, e.clientY - drag.y);
      drag = { x: e.clientX, y: e.clientY };
    }
  });
  window.addEventListener("pointerup", function () { drag = null; });
  box.addEventListener("keydown", function (e) {
    var step = 80, keys = {
      "+": actions["in"], "=": actions["in"], "-": actions.out, "0": reset, "f": fit,
      "ArrowLeft": function () { pan(step, 0); }, "ArrowRight": function () { pan(-step, 0); },
      "ArrowUp": function () { pan(0, step); }, "ArrowDown": function () { pan(0, -step); }
    };
    if (keys[e.key]) {
      e.preventDefault();
      keys[e.key]();
    }
  });
  var buttons = document.querySelectorAll("button[data-zoom]");
  for (var i = 0; i < buttons.length; i++) {
    buttons[i].addEventListener("click", function () { actions[this.getAttribute("data-zoom")](); });
  }
  var cuts = svg.querySelectorAll(".legend-entry[data-snap]");
  for (var j = 0; j < cuts.length; j++) {
    cuts[j].addEventListener("click", function (e) {
      e.stopPropagation();
      var s = this.getAttribute("data-snap");
      if (svg.getAttribute("data-focus") === s) {
        svg.removeAttribute("data-focus");
      } else {
        svg.setAttribute("data-focus", s);
      }
    });
  }
  window.addEventListener("resize", apply);
  reset();
})();
