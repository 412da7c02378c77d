// controller/conditions_test.cc
#include "controller/conditions.h"

#include <catch2/catch.hpp>

namespace kmt::controller {
namespace {

const base::WallTime kNow =
    base::WallTime(std::chrono::seconds(1767225600));  // 2026-01-01T00:00:00Z
const std::string kNowText = "2026-01-01T00:00:00Z";
const std::string kOld = "2025-12-31T23:00:00Z";

TEST_CASE("SetCondition adds, updates and keeps transition times as KubeVirt does") {
  struct Row {
    std::string name;
    DesiredCondition want;
    ConditionChange change;
    api::MigrationCondition result;
  };
  const api::MigrationCondition existing{"t", "True", "R", "m", kOld, kOld};
  auto row = GENERATE_COPY(values<Row>({
      {"identical: nothing",
       {"t", "True", "R", "m"},
       ConditionChange::kNone,
       {"t", "True", "R", "m", kOld, kOld}},
      {"new message: probe time only",
       {"t", "True", "R", "m2"},
       ConditionChange::kMessage,
       {"t", "True", "R", "m2", kNowText, kOld}},
      {"new reason, same status: a transition, time kept",
       {"t", "True", "R2", "m"},
       ConditionChange::kTransitioned,
       {"t", "True", "R2", "m", kNowText, kOld}},
      {"new status: transition time moves",
       {"t", "False", "R", "m"},
       ConditionChange::kTransitioned,
       {"t", "False", "R", "m", kNowText, kNowText}},
  }));
  CAPTURE(row.name);
  std::vector<api::MigrationCondition> list = {{"kubevirt", "True", "", "", "", ""}, existing};
  REQUIRE(SetCondition(list, row.want, kNow) == row.change);
  REQUIRE(list.size() == 2);
  REQUIRE(list[0] == api::MigrationCondition{"kubevirt", "True", "", "", "", ""});
  REQUIRE(list[1] == row.result);
}

TEST_CASE("SetCondition appends a condition that is not there yet") {
  std::vector<api::MigrationCondition> list;
  REQUIRE(SetCondition(list, {"t", "True", "R", "m"}, kNow) == ConditionChange::kTransitioned);
  REQUIRE(list ==
          std::vector<api::MigrationCondition>{{"t", "True", "R", "m", kNowText, kNowText}});
  REQUIRE(FindCondition(list, "t") == &list[0]);
  REQUIRE(FindCondition(list, "u") == nullptr);
}

TEST_CASE("ConditionsToJson writes KubeVirt's shape: omitempty strings, null times") {
  std::vector<api::MigrationCondition> list = {{"a", "True", "", "", "", ""},
                                               {"b", "False", "R", "m", kOld, kNowText}};
  REQUIRE(ConditionsToJson(list).dump() ==
          R"([{"lastProbeTime":null,"lastTransitionTime":null,"status":"True","type":"a"},)"
          R"({"lastProbeTime":"2025-12-31T23:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z",)"
          R"("message":"m","reason":"R","status":"False","type":"b"}])");
}

}  // namespace
}  // namespace kmt::controller
