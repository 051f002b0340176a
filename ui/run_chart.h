// A small painted chart of the run: throughput (pages/min) and process memory (MiB) over the
// pages done, so memory can be seen to stay flat as the volume grows.
#pragma once

#include <QWidget>

#include <vector>

namespace quire::ui {

class RunChart : public QWidget {
    Q_OBJECT
public:
    explicit RunChart(QWidget* parent = nullptr);
    void clear();
    void addSample(int pagesDone, double pagesPerMinute, double memoryMiB);
    int sampleCount() const { return int(m_samples.size()); }
    QSize sizeHint() const override { return {420, 160}; }

protected:
    void paintEvent(QPaintEvent*) override;

private:
    struct Sample {
        int pages;
        double rate, mib;
    };
    std::vector<Sample> m_samples;
};

}  // namespace quire::ui
