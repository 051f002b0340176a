// Find and replace across the book (engine: BookSearch).
#include "find_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace quire::ui {

FindPanel::FindPanel(QWidget* parent) : QWidget(parent) {
    m_find = new QLineEdit;
    m_find->setObjectName("findText");
    m_find->setPlaceholderText(tr("Find in the book"));
    m_find->setClearButtonEnabled(true);
    m_replace = new QLineEdit;
    m_replace->setObjectName("replaceText");
    m_replace->setPlaceholderText(tr("Replace with"));
    m_mode = new QComboBox;
    m_mode->setObjectName("findMode");
    m_mode->addItem(tr("Plain text"), int(SearchMode::Plain));
    m_mode->addItem(tr("Whole words"), int(SearchMode::WholeWord));
    m_mode->addItem(tr("Regular expression"), int(SearchMode::Regex));
    m_mode->setToolTip(tr("A regular expression's replacement may use \\1 to \\9 for its groups"));
    m_case = new QCheckBox(tr("Match case"));
    m_findAll = new QPushButton(tr("Find All"));
    m_replaceOne = new QPushButton(tr("Replace"));
    m_replaceAll = new QPushButton(tr("Replace All"));
    m_undo = new QPushButton(tr("Undo Replace All"));
    m_list = new QListWidget;
    m_list->setObjectName("findResults");
    m_list->setUniformItemSizes(true);
    m_status = new QLabel;
    m_status->setWordWrap(true);

    auto* grid = new QGridLayout;
    grid->addWidget(m_find, 0, 0, 1, 2);
    grid->addWidget(m_findAll, 0, 2);
    grid->addWidget(m_replace, 1, 0, 1, 2);
    grid->addWidget(m_replaceOne, 1, 2);
    grid->addWidget(m_mode, 2, 0);
    grid->addWidget(m_case, 2, 1);
    grid->addWidget(m_replaceAll, 2, 2);
    grid->addWidget(m_undo, 3, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(grid);
    layout->addWidget(m_list, 1);
    layout->addWidget(m_status);

    connect(m_find, &QLineEdit::returnPressed, this, [this] { findAll(); });
    connect(m_findAll, &QPushButton::clicked, this, [this] { findAll(); });
    connect(m_replaceOne, &QPushButton::clicked, this, [this] { replaceCurrent(); });
    connect(m_replaceAll, &QPushButton::clicked, this, [this] { replaceAll(); });
    connect(m_undo, &QPushButton::clicked, this, [this] { undoReplaceAll(); });
    connect(m_list, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && row != m_current) activateHit(row);
    });
    connect(m_find, &QLineEdit::textChanged, this, [this] { updateButtons(); });
    updateButtons();
}

void FindPanel::setStore(ProjectStore* store) {
    m_store = store;
    m_hits.clear();
    m_current = -1;
    m_lastReplaceIds.clear();
    m_lastReplacePages.clear();
    m_list->clear();
    m_status->clear();
    updateButtons();
}

void FindPanel::focusQuery() {
    m_find->setFocus();
    m_find->selectAll();
}

void FindPanel::setQuery(const QString& text, SearchMode mode, bool matchCase) {
    m_find->setText(text);
    m_mode->setCurrentIndex(m_mode->findData(int(mode)));
    m_case->setChecked(matchCase);
}

void FindPanel::setReplacement(const QString& text) { m_replace->setText(text); }

QString FindPanel::message() const { return m_status->text(); }

SearchQuery FindPanel::query() const {
    return {m_find->text().toStdString(), SearchMode(m_mode->currentData().toInt()), m_case->isChecked()};
}

bool FindPanel::findAll() {
    if (!m_store) return false;
    emit aboutToSearch();
    auto hits = findInBook(*m_store, query());
    if (!hits) {
        m_hits.clear();
        m_current = -1;
        m_list->clear();
        m_status->setText(QString::fromStdString(hits.status().message()));
        updateButtons();
        return false;
    }
    m_hits = std::move(*hits);
    showHits();
    if (!m_hits.empty()) activateHit(0);
    return true;
}

void FindPanel::showHits() {
    m_current = -1;
    m_list->clear();
    for (const auto& h : m_hits)
        m_list->addItem(tr("p. %1, line %2: %3").arg(h.sequence).arg(h.line).arg(QString::fromStdString(h.context)));
    int pages = 0;
    for (size_t i = 0; i < m_hits.size(); ++i) pages += i == 0 || m_hits[i].pageId != m_hits[i - 1].pageId;
    m_status->setText(m_hits.empty() ? tr("Not found in the book") : tr("%n hit(s)", "", int(m_hits.size())) + " · " +
                                                                          tr("%n page(s)", "", pages));
    updateButtons();
}

void FindPanel::activateHit(int i) {
    if (i < 0 || i >= int(m_hits.size())) return;
    m_current = i;
    if (m_list->currentRow() != i) m_list->setCurrentRow(i);
    emit hitActivated(m_hits[size_t(i)]);
    updateButtons();
}

bool FindPanel::replaceCurrent() {
    if (!m_store || m_current < 0 || m_current >= int(m_hits.size())) return false;
    auto search = BookSearch::compile(query());
    if (!search) return false;
    const SearchHit hit = m_hits[size_t(m_current)];
    emit aboutToSearch();
    auto text = m_store->effectiveText(hit.pageId);
    if (!text) return false;
    const auto with = search->replacementAt(QString::fromStdString(*text), hit.start, m_replace->text());
    bool done = false;
    if (with) emit replaceInEditor(hit, *with, &done);
    if (!done) {
        m_status->setText(tr("The page changed since the search; search again"));
        return false;
    }
    // The page's later hits moved; the list is found again, and the next hit after this one shown.
    const int next = m_current;
    emit aboutToSearch();
    auto hits = findInBook(*m_store, query());
    if (!hits) return true;
    m_hits = std::move(*hits);
    showHits();
    if (!m_hits.empty()) activateHit(std::min(next, int(m_hits.size()) - 1));
    return true;
}

bool FindPanel::replaceAll() {
    if (!m_store) return false;
    emit aboutToSearch();
    auto r = replaceInBook(*m_store, query(), m_replace->text().toStdString());
    if (!r) {
        m_status->setText(QString::fromStdString(r.status().message()));
        return false;
    }
    const std::vector<int64_t> pages = r->pageIds;
    m_lastReplaceIds = r->correctionIds;
    m_lastReplacePages = pages;
    m_hits.clear();
    showHits();
    m_status->setText(tr("Replaced %n hit(s)", "", r->hits) + " · " + tr("%n page(s)", "", r->pages));
    emit pagesChanged(pages);
    updateButtons();
    return true;
}

bool FindPanel::undoReplaceAll() {
    if (!m_store || m_lastReplaceIds.empty()) return false;
    emit aboutToSearch();
    if (Status s = m_store->removeCorrections(m_lastReplaceIds); !s) {
        m_status->setText(QString::fromStdString(s.message()));
        return false;
    }
    const auto pages = m_lastReplacePages;
    m_lastReplaceIds.clear();
    m_lastReplacePages.clear();
    m_status->setText(tr("Replace All undone"));
    emit pagesChanged(pages);
    updateButtons();
    return true;
}

void FindPanel::updateButtons() {
    const bool open = m_store && !m_store->readOnly();
    m_findAll->setEnabled(m_store && !m_find->text().isEmpty());
    m_replaceOne->setEnabled(open && m_current >= 0);
    m_replaceAll->setEnabled(open && !m_find->text().isEmpty());
    m_undo->setEnabled(open && !m_lastReplaceIds.empty());
}

}  // namespace quire::ui
