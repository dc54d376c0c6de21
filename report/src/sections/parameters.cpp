// Virtual time: the model's parameters that produced the prediction.
#include "html.hpp"
#include "section.hpp"

namespace bgl::report {
namespace {

bool render(const Context& c, std::string& out) {
  if (!c.virtual_time) return false;
  const auto params = c.virtual_time->find("parameters");
  if (!params) return false;
  out += "<p>From " + escape((*c.virtual_time)["parameters_source"].text()) +
         " (docs/VIRTUAL_TIME.md explains each).</p>\n<details><summary>" +
         std::to_string(params->members().size()) + " parameters</summary>\n";
  {
    Table table(out, {"name", "value", "unit", "source"});
    for (const auto& [name, p] : params->members())
      table.row({escape(name), escape(p["value"].json().dump()), escape(p["unit"].text()),
                 escape(p["source"].text())});
  }
  out += "</details>\n";
  return true;
}

}  // namespace

Section parameters_section() {
  return {"parameters", "Model parameters", render};
}

}  // namespace bgl::report
