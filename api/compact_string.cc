#include "api/compact_string.h"

#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <nlohmann/json.hpp>
#include <ostream>

#include "api/names.h"

namespace kmt::api {
namespace {

static_assert(std::endian::native == std::endian::little, "inline texts follow the tag byte");
static_assert(sizeof(uintptr_t) == 8);

// The heap block of a long text: its length, then its characters.
struct Block {
  uint32_t size;
  char* chars() { return reinterpret_cast<char*>(this + 1); }
  const char* chars() const { return reinterpret_cast<const char*>(this + 1); }
};

// Texts that recur on every cached object of a kind, kept once in the binary: every one
// longer than the 7 characters a word holds. Only appended to (indices are in objects only
// while the process runs, so order is free; the list is short, as Assign scans it).
constexpr std::string_view kKnownTexts[] = {
    // Pod and VMIM phases (KubeVirt's VirtualMachineInstanceMigrationPhase).
    "Succeeded",
    "Scheduling",
    "Scheduled",
    "PreparingTarget",
    "TargetReady",
    "WaitingForSync",
    "Synchronizing",
    // A gated pod's PodScheduled condition (the scheduler's), and an unschedulable one's.
    "SchedulingGated",
    "Scheduling is blocked due to non-empty scheduling gates",
    kReasonUnschedulable,
    // Our VMIM conditions' types and reasons (api/names.h).
    kConditionTermApplied,
    kConditionTargetPodUnschedulable,
    kReasonTermApplied,
    kReasonTargetPodEscapedGate,
    kReasonInvalidAddedTerm,
    kReasonInboundLimitReached,
    kReasonPermanentlyUnschedulable,
    // Topology keys of pod (anti-)affinity terms (KubeVirt's names the hostname).
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
};

// The index of `s` in kKnownTexts, or -1.
int KnownIndex(std::string_view s) {
  for (size_t i = 0; i < std::size(kKnownTexts); ++i) {
    if (kKnownTexts[i] == s) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

void CompactString::Assign(std::string_view s) {
  if (s.empty()) {
    word_ = 0;
  } else if (s.size() <= kInline) {
    word_ = 1U | (s.size() << 1U);
    std::memcpy(reinterpret_cast<char*>(&word_) + 1, s.data(), s.size());
  } else if (const int known = KnownIndex(s); known >= 0) {
    word_ = 2U | (static_cast<uintptr_t>(known) << 2U);
  } else {
    // Cached objects' texts are names, uids and messages: far below 4 GiB.
    const auto size =
        static_cast<uint32_t>(std::min<size_t>(s.size(), std::numeric_limits<uint32_t>::max()));
    void* mem = ::operator new(sizeof(Block) + size);
    auto* b = new (mem) Block{size};
    std::memcpy(b->chars(), s.data(), size);
    word_ = reinterpret_cast<uintptr_t>(b);
  }
}

void CompactString::Free() {
  if (word_ != 0 && !is_inline() && !is_known()) {
    // The word is the block's address here (its tag bit clear).
    auto* b = reinterpret_cast<Block*>(word_);  // NOLINT(performance-no-int-to-ptr)
    b->~Block();
    ::operator delete(b);
  }
  word_ = 0;
}

std::string_view CompactString::view() const {
  if (word_ == 0) return {};
  if (is_inline()) return {reinterpret_cast<const char*>(&word_) + 1, (word_ >> 1U) & 7U};
  if (is_known()) return kKnownTexts[word_ >> 2U];
  const auto* b = reinterpret_cast<const Block*>(word_);  // NOLINT(performance-no-int-to-ptr)
  return {b->chars(), b->size};
}

CompactString& CompactString::operator=(const CompactString& o) {
  if (this != &o) *this = o.view();
  return *this;
}

CompactString& CompactString::operator=(CompactString&& o) noexcept {
  if (this != &o) {
    Free();
    word_ = o.word_;
    o.word_ = 0;
  }
  return *this;
}

CompactString& CompactString::operator=(std::string_view s) {
  // `s` may be this text itself (or a part of it): build first, then let go of the old one.
  CompactString next;
  next.Assign(s);
  return *this = std::move(next);
}

std::ostream& operator<<(std::ostream& os, const CompactString& s) { return os << s.view(); }

void to_json(nlohmann::json& j, const CompactString& s) { j = std::string(s.view()); }

void from_json(const nlohmann::json& j, CompactString& s) { s = j.get_ref<const std::string&>(); }

}  // namespace kmt::api
