# A testbed on top of the bash image: the tree is extracted at / and the root file system
# becomes a git repository (system folders ignored), so `git status` lists what an episode changed.
ARG BASE
FROM ${BASE}
ADD testbed.tar /
COPY gitignore /.gitignore
RUN cd / && git init -q && git add -A \
 && git -c user.name=intercode -c user.email=intercode@localhost commit -qm 'initial commit'
WORKDIR /
