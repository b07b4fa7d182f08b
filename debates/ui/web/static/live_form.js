// The live debate form: the seat list follows the chosen configuration.
(function () {
  "use strict";
  var data = document.getElementById("form-data");
  var seats = JSON.parse(data.dataset.seats);
  var descriptions = JSON.parse(data.dataset.descriptions);
  var config = document.getElementById("config");
  var seat = document.getElementById("seat");
  var about = document.getElementById("config-description");

  function refresh() {
    var chosen = seat.value;
    while (seat.options.length > 1) { seat.remove(1); }
    (seats[config.value] || []).forEach(function (s) {
      var option = document.createElement("option");
      option.value = s.name;
      option.textContent = s.name + " (" + s.role + (s.stance ? ", defends " + s.stance : "") + ")";
      if (s.name === chosen) { option.selected = true; }
      seat.appendChild(option);
    });
    seat.disabled = seat.options.length === 1;
    about.textContent = descriptions[config.value] || "";
  }

  config.addEventListener("change", refresh);
  refresh();
})();
