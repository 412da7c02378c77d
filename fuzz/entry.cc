#include "fuzz/entry.h"

#include <exception>
#include <string>

namespace kmt::fuzz {

std::string CheckInput(std::string_view input) {
  try {
    return CheckTarget(input);
  } catch (const std::exception& e) {
    return std::string("exception escaped: ") + e.what();
  } catch (...) {
    return "unknown exception escaped";
  }
}

}  // namespace kmt::fuzz
