// The text of a node kind, as the reports and the workspace tables spell it.
#pragma once

#include "vprof/analyzer.hpp"

namespace vprof::analyzer::detail {

inline const char *kind_text(Node::Kind k) {
  switch (k) {
  case Node::Kind::Root:
    return "root";
  case Node::Kind::Site:
    return "site";
  case Node::Kind::Wait:
    return "wait";
  case Node::Kind::Untracked:
    return "untracked";
  }
  return "root";
}

} // namespace vprof::analyzer::detail
