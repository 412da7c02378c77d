// kube/managed_fields.h — parse an API response while leaving out metadata.managedFields.
//
// Server-side apply bookkeeping is often the largest part of an object (a virt-launcher
// pod's managedFields is about half its JSON) and no reader in this project uses it.
// Informers ask for it to be left out (ListOptions/WatchOptions::omit_managed_fields);
// dropping it while parsing, instead of erasing it afterwards, means it is never built
// as a DOM, which is what bounds an initial LIST page's memory.
#pragma once

#include <string_view>

#include "kube/client.h"

namespace kmt::kube {

// Where the objects sit in a body.
enum class ObjectsAt {
  kTop,         // the body is one object (GET, and the objects of a List's items via kListItems)
  kListItems,   // {"items": [object, ...]}
  kWatchEvent,  // {"type": ..., "object": object}
};

// Json::parse(text) without allow_exceptions, except that the "managedFields" member of the
// "metadata" object of the object(s) at `at` is skipped. Members with that name elsewhere
// (a spec field, an annotation key) are kept. Returns a discarded value when the text is not
// JSON.
Json ParseOmittingManagedFields(std::string_view text, ObjectsAt at);

}  // namespace kmt::kube
