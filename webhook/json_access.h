// webhook/json_access.h — reading members of objects that arrived in an AdmissionReview
// without trusting their shape: a missing member, a null or a value of another type reads
// as "absent", never as an exception. The readers are kube/reads.h's (one implementation
// for the client, the plugin and the admitters), named here for the admitters.
#pragma once

#include "kube/reads.h"

namespace kmt::webhook {

// The value at `path` (object members, outermost first), or nullptr when a step is missing,
// null, or not an object.
using kube::Member;

// The string at `path`, or "" when absent or not a string.
using kube::StringAt;

}  // namespace kmt::webhook
