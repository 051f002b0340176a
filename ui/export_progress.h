// The book exported in a thread of its own behind a cancellable progress dialog, so the window
// keeps drawing while a long book is written.
#pragma once

#include <string>

#include "quire/core/status.h"
#include "quire/export/exporters.h"

class QWidget;

namespace quire::ui {

// Exports the project at `projectPath` (opened again in the export thread: a connection of its own)
// with `options` (their cancel flag and progress callback are the dialog's). ErrorCode::Cancelled
// when the user cancelled.
Status exportWithProgress(const std::string& projectPath, ExportOptions options, QWidget* parent);

}  // namespace quire::ui
